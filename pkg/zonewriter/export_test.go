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
