package zonewriter

// WritesWaiting returns how many writes of account's writers wait for one of its write slots.
func WritesWaiting(s *Set, account string) int {
	s.mu.Lock()
	sl := s.accounts[account]
	s.mu.Unlock()
	if sl == nil {
		return 0
	}
	return sl.waiting()
}

// ViewWaiters returns how many Snapshot and RecordSets callers wait for a view load.
func ViewWaiters(w *Writer) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.viewWaiters
}

// Flushing reports whether a flush of w runs.
func Flushing(w *Writer) bool { return w.flushing.Load() }
