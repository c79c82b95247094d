package main

import (
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotPNG draws the handoff gap p50 and the commands per acquisition of
// every library in every (c) configuration, one above the other.
func (r *report) plotPNG(path string) error {
	rows := lockRows()
	names := make([]string, len(rows))
	for i, l := range rows {
		names[i] = strings.Replace(l.name, "goredisson ", "goredisson\n", 1)
		names[i] = strings.Replace(names[i], " tuned", "\ntuned", 1)
	}
	mk := func(title, ylabel, metric string, scale float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		p.NominalX(names...)
		p.Legend.Top = true
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		for i, cc := range contendConfigs {
			var pts plotter.XYs
			for j, l := range rows {
				v := r.median("c:"+cc.label, l.name, metric) / scale
				if math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				// log scale: values below 1 are drawn at 1
				pts = append(pts, plotter.XY{X: float64(j) + 0.12*(float64(i)-1.5), Y: math.Max(v, 1)})
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color = plotutil.Color(i)
			sc.GlyphStyle.Shape = plotutil.Shape(i)
			sc.GlyphStyle.Radius = vg.Points(4)
			p.Add(sc)
			p.Legend.Add(cc.label, sc)
		}
		p.Y.Min = math.Max(p.Y.Min*0.8, 0.8)
		p.Y.Max *= 1.25
		return p, nil
	}
	gap, err := mk("Handoff gap p50 (unlock returned → next lock returned), one key, 1 ms hold", "µs", "gap p50", 1e3)
	if err != nil {
		return err
	}
	cmds, err := mk("Redis commands per acquisition", "commands", "cmds/acq", 1)
	if err != nil {
		return err
	}
	img := vgimg.New(vg.Points(1000), vg.Points(800))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadX: vg.Points(6), PadY: vg.Points(14)}
	canvases := plot.Align([][]*plot.Plot{{gap}, {cmds}}, tiles, dc)
	gap.Draw(canvases[0][0])
	cmds.Draw(canvases[1][0])
	return savePNG(img, path)
}
