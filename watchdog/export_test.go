package watchdog

// Names the package's external tests use.

// MaxBatch is maxBatch.
const MaxBatch = maxBatch

// ErrLost is errLost.
var ErrLost = errLost

// Rounds returns how many RenewFunc calls (round trips) the Scheduler made.
func (s *Scheduler) Rounds() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rounds
}
