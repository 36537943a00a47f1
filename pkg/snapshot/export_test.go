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

// RenderedChunks are the bytes of the chunks the answers are joined from.
type RenderedChunks struct{ JSON, JSONGzip, HTML, HTMLGzip [][]byte }

// Chunks returns the chunks of the current rendering's full answer and page.
func (s *Snapshot) Chunks() RenderedChunks {
	s.renderMu.Lock()
	defer s.renderMu.Unlock()
	var c RenderedChunks
	for _, ch := range s.r.json {
		c.JSON, c.JSONGzip = append(c.JSON, ch.plain), append(c.JSONGzip, ch.gz)
	}
	for _, ch := range s.r.html {
		c.HTML, c.HTMLGzip = append(c.HTML, ch.plain), append(c.HTMLGzip, ch.gz)
	}
	return c
}

// Held reports how many answers f holds rendered.
func (f *Feed) Held() int { return len(f.offers) }

// AppsPerChunk is how many apps one chunk holds.
const AppsPerChunk = appsPerChunk
