package main

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"time"
)

// The default run's record: every burst's figures as JSON, written beside
// the report (results.md -> results.json), so that a later run can be
// checked against it (--baseline: the build before a change) and any
// ratio can be taken again from the raw figures.

// record is the JSON form of a run.
type record struct {
	Started time.Time
	What    string // the server and versions
	// Parts: part -> run -> bursts -> row -> metric -> value. JSON has no
	// infinity: ±Inf is written as ±infJSON (fairness with a starved
	// worker), NaN is left out.
	Parts map[string][][]figures
}

const infJSON = 1e300

// recordPath returns where the record of a report written to out goes.
func recordPath(out string) string {
	return strings.TrimSuffix(out, ".md") + ".json"
}

func writeRecord(path string, rep *report) error {
	rec := record{Started: rep.started, What: rep.what + " (" + rep.redisVersion + ")", Parts: map[string][][]figures{}}
	for part, runs := range rep.store.parts {
		out := make([][]figures, len(runs))
		for i, bursts := range runs {
			for _, f := range bursts {
				out[i] = append(out[i], mapFigures(f, toJSON))
			}
		}
		rec.Parts[part] = out
	}
	b, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// readRecord reads a record into a store.
func readRecord(path string) (*burstStore, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	s := &burstStore{}
	for part, runs := range rec.Parts {
		for run, bursts := range runs {
			for _, f := range bursts {
				s.add(part, run, mapFigures(f, fromJSON))
			}
		}
	}
	return s, nil
}

// mapFigures copies f through conv (dropping the values it refuses).
func mapFigures(f figures, conv func(float64) (float64, bool)) figures {
	out := figures{}
	for row, m := range f {
		out[row] = map[string]float64{}
		for k, v := range m {
			if c, ok := conv(v); ok {
				out[row][k] = c
			}
		}
	}
	return out
}

func toJSON(v float64) (float64, bool) {
	switch {
	case math.IsNaN(v):
		return 0, false
	case math.IsInf(v, 1):
		return infJSON, true
	case math.IsInf(v, -1):
		return -infJSON, true
	}
	return v, true
}

func fromJSON(v float64) (float64, bool) {
	switch {
	case v >= infJSON:
		return math.Inf(1), true
	case v <= -infJSON:
		return math.Inf(-1), true
	}
	return v, true
}
