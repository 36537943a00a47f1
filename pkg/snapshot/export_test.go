package snapshot

// HoldRenders makes writers wait for a render until the returned function
// is called.
func (s *Snapshot) HoldRenders() (release func()) {
	s.renderMu.Lock()
	return s.renderMu.Unlock
}

// Changes reports how many changes writers made, rendered or not.
func (s *Snapshot) Changes() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changes
}
