package testkit

import "sync"

// Memo remembers what a function of bytes made of the last bytes it was
// given, so that a test asking a server many times a second for an answer
// that mostly did not change decodes each answer once: decoding is most of
// such a test's own CPU under the race detector. The function must depend
// on the bytes alone, and what it makes must be read-only once made. A
// Memo is safe for concurrent use.
type Memo[T any] struct {
	fn   func([]byte) (T, error)
	size int

	mu   sync.Mutex
	seen map[string]T
}

// NewMemo returns a Memo of fn that remembers at most size results.
func NewMemo[T any](size int, fn func([]byte) (T, error)) *Memo[T] {
	return &Memo[T]{fn: fn, size: size, seen: map[string]T{}}
}

// Of returns what fn makes of b, from memory when b was seen lately. An
// error is not remembered.
func (m *Memo[T]) Of(b []byte) (T, error) {
	m.mu.Lock()
	v, ok := m.seen[string(b)]
	m.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := m.fn(b)
	if err != nil {
		return v, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen) >= m.size {
		clear(m.seen)
	}
	m.seen[string(b)] = v
	return v, nil
}
