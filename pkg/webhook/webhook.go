// Package webhook receives GitHub's signed webhook deliveries: it verifies
// the signature, reads the release event and decides which apps to refresh,
// then hands the request to a Recorder, which records it (in Redis for the
// pollers, or in the process's own poller) and answers in milliseconds. It
// never calls GitHub. It knows net/http, not echo.
package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/release"
)

// Limits of one delivery, and of all of them at once: a body is read
// before anything says who sent it, so these bound what anyone on the
// internet can make a pod hold.
const (
	// MaxBody is the most of a body read; a longer one is answered 413.
	// GitHub's release event is 6–9 KB without notes or assets (its
	// documented example: 8,634 bytes), about 1.9 KB more per asset, and the
	// notes, at most 125,000 characters, are at most 375 KB of JSON-encoded
	// UTF-8 (three bytes a character): 512 KiB holds the longest notes with
	// 60 assets.
	MaxBody = 512 << 10
	// Readers is how many bodies a Handler reads at once; a delivery that
	// finds them all taken for waitReader is answered 503 with RetryAfter.
	// It bounds the memory of unauthenticated bodies at Readers × MaxBody.
	Readers = 4
	// RetryAfter is the Retry-After, in seconds, of a 503 for a busy receiver.
	RetryAfter = 10
	// waitReader is how long a delivery waits for a reader: GitHub's
	// deliveries take a millisecond to read, so a short wait absorbs a burst
	// of real ones without letting a flood queue up.
	waitReader = 250 * time.Millisecond
	// readBody bounds the time a body may take to arrive, which is how long
	// a slow sender can hold a reader.
	readBody = 3 * time.Second
	// maxDeliveryID bounds X-GitHub-Delivery, a GUID.
	maxDeliveryID = 100
	// recordTimeout bounds the Recorder's work, well within GitHub's 10 s.
	recordTimeout = 3 * time.Second
)

// The headers GitHub sends with a delivery.
const (
	EventHeader    = "X-GitHub-Event"
	DeliveryHeader = "X-GitHub-Delivery"
)

// The outcomes of a delivery, as answered and counted.
const (
	Accepted     = "accepted"      // a ping, or a release event for apps we serve: recorded
	Ignored      = "ignored"       // another event, or a repository we do not serve
	Duplicate    = "duplicate"     // a delivery id seen before: nothing done again
	BadSignature = "bad_signature" // missing or wrong X-Hub-Signature-256
	TooLarge     = "too_large"     // a body over MaxBody
	Busy         = "busy"          // every reader taken: 503, Retry-After
	Unavailable  = "unavailable"   // the request could not be recorded (Redis down)
	Invalid      = "invalid"       // signed, but no delivery id or a release body that does not parse
)

// The event label values: the header is read before the signature is
// checked, so anything else counts as "other".
const (
	EventPing    = "ping"
	EventRelease = "release"
	EventOther   = "other"
)

// Recorder records deliveries and the refresh requests they make: the
// pods' Redis for the pollers (pkg/redis/store), or Local standalone.
type Recorder interface {
	// Deliver records a delivery under each of ids and, unless one of them
	// was recorded before, each of refreshes: a request by entry key
	// (release.Entries), all made at the delivery's arrival. It reports
	// whether the delivery was new. An error means nothing may be assumed
	// recorded, and the ids are not remembered.
	Deliver(ctx context.Context, ids []string, refreshes map[string]release.Refresh) (bool, error)
}

// Observer counts deliveries, for metrics. It is called concurrently.
type Observer interface {
	// Delivery counts one delivery of event (EventPing, EventRelease or
	// EventOther) with its outcome.
	Delivery(event, outcome string)
}

// Config is what a Handler needs; Secrets, Apps and Recorder are required.
type Config struct {
	Secrets  []string      // one, or two while the secret is rotated
	Apps     []release.App // the configured apps
	Recorder Recorder
	Observer Observer    // nil: none
	Log      *zap.Logger // nil: no logging
	Clock    clock.Clock // nil: clock.System
}

// Handler answers POST deliveries (see New). It is safe for concurrent use.
type Handler struct {
	c       Config
	readers chan *reader // Readers of them, each reused for one body at a time
}

// reader holds what reading one body takes: a buffer that grows to at most
// MaxBody and is kept for the next body, and the body's HMACs.
type reader struct {
	buf  []byte
	macs macs
}

// New returns the handler of the webhook route. It fails without a secret,
// or with an empty one, or without a Recorder.
func New(c Config) (*Handler, error) {
	if len(c.Secrets) == 0 || c.Recorder == nil {
		return nil, errors.New("new webhook: no secret or no recorder")
	}
	for _, s := range c.Secrets {
		if s == "" {
			return nil, errors.New("new webhook: an empty secret")
		}
	}
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	c.Clock = clock.Or(c.Clock)
	h := &Handler{c: c, readers: make(chan *reader, Readers)}
	for range Readers {
		h.readers <- &reader{macs: newMACs(c.Secrets)}
	}
	return h, nil
}

// ServeHTTP answers one delivery: 413 for a body over MaxBody, 401 for a
// missing or wrong signature, 200 for a ping, 202 for a release event (its
// apps' refresh recorded, or "duplicate" for a delivery id or a body seen
// before: GitHub's redelivery, or a signed body replayed), 202
// "ignored" for any other event or a repository not served, 400 for a signed
// delivery without an id or with a release body that does not parse, and 503
// when every reader is busy (with Retry-After, the body unread) or the Recorder
// cannot record the request, so that GitHub shows it failed and it can be
// redelivered. Nothing is done unless the signature verifies.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	received := h.c.Clock.Now()
	event := eventLabel(r.Header.Get(EventHeader))
	outcome, status, body := h.serve(w, r, event, received)
	if h.c.Observer != nil {
		h.c.Observer.Delivery(event, outcome)
	}
	b, _ := json.Marshal(body) // cannot fail: strings only
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

type answer struct {
	Status string   `json:"status,omitempty"`
	Error  string   `json:"error,omitempty"`
	Apps   []string `json:"apps,omitempty"`
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, event string, received time.Time) (outcome string, status int, body answer) {
	p, sum, outcome, status, body := h.open(w, r, event)
	if outcome != "" {
		return outcome, status, body
	}
	id := r.Header.Get(DeliveryHeader)
	apps := Matching(h.c.Apps, p.Repo)
	if len(apps) == 0 {
		return Ignored, http.StatusAccepted, answer{Status: Ignored}
	}
	ctx, cancel := context.WithTimeout(r.Context(), recordTimeout)
	defer cancel()
	// X-GitHub-Delivery is not signed: the body's hash, checked first, makes
	// a signed body replayed under another id a duplicate that records
	// nothing.
	ids := []string{"sha256-" + hex.EncodeToString(sum[:]), id}
	first, err := h.c.Recorder.Deliver(ctx, ids, Refreshes(h.c.Apps, p, received))
	if err != nil {
		h.c.Log.Warn("webhook delivery not recorded", logsafe.String("delivery", id), zap.Strings("apps", apps), logsafe.NamedError("err", err))
		return Unavailable, http.StatusServiceUnavailable, answer{Error: "unavailable, redeliver later"}
	}
	if !first {
		return Duplicate, http.StatusAccepted, answer{Status: Duplicate}
	}
	tag := p.Hint()
	if tag == "" {
		tag = p.PrereleaseHint()
	}
	h.c.Log.Info("webhook refresh", logsafe.String("delivery", id), logsafe.String("action", p.Action),
		zap.Strings("apps", apps), logsafe.String("tag", tag))
	return Accepted, http.StatusAccepted, answer{Status: Accepted, Apps: apps}
}

// open reads and authenticates a delivery with one of the Handler's
// readers, given back before it returns: a release event's payload and its
// body's hash, or the outcome (not "") that answers the delivery.
func (h *Handler) open(w http.ResponseWriter, r *http.Request, event string) (p Payload, sum [sha256.Size]byte, outcome string, status int, body answer) {
	if r.ContentLength > MaxBody {
		return p, sum, TooLarge, http.StatusRequestEntityTooLarge, answer{Error: "body too large"}
	}
	rd, ok := h.reader(r.Context())
	if !ok {
		// The body stays unread: net/http reads none of it after an answer
		// that closes the connection (daemon.Serve).
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
		w.Header().Set("Connection", "close")
		return p, sum, Busy, http.StatusServiceUnavailable, answer{Error: "busy, redeliver later"}
	}
	defer func() { h.readers <- rd }()
	raw, err := rd.read(w, r)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return p, sum, TooLarge, http.StatusRequestEntityTooLarge, answer{Error: "body too large"}
		}
		return p, sum, Invalid, http.StatusBadRequest, answer{Error: "body unreadable"}
	}
	if !rd.macs.match(r.Header.Get(SignatureHeader)) {
		return p, sum, BadSignature, http.StatusUnauthorized, answer{Error: "bad signature"}
	}
	switch event {
	case EventPing:
		return p, sum, Accepted, http.StatusOK, answer{Status: "pong"}
	case EventOther:
		return p, sum, Ignored, http.StatusAccepted, answer{Status: Ignored}
	}
	if id := r.Header.Get(DeliveryHeader); id == "" || len(id) > maxDeliveryID || !release.SafeName(id) {
		return p, sum, Invalid, http.StatusBadRequest, answer{Error: "missing or malformed " + DeliveryHeader}
	}
	if p, err = Parse(raw); err != nil {
		return p, sum, Invalid, http.StatusBadRequest, answer{Error: "release payload does not parse; is the content type application/json?"}
	}
	return p, sha256.Sum256(raw), "", 0, answer{}
}

// reader takes a reader, waiting up to waitReader for one; false when none
// came free, or the request ended first.
func (h *Handler) reader(ctx context.Context) (*reader, bool) {
	select {
	case rd := <-h.readers:
		return rd, true
	default:
	}
	t := time.NewTimer(waitReader)
	defer t.Stop()
	select {
	case rd := <-h.readers:
		return rd, true
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, false
}

// read reads r's body, at most MaxBody of it within readBody, into the
// reader's buffer, computing its HMACs on the way. The bytes returned are
// the buffer's: valid until the reader is given back.
func (rd *reader) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	// Not every ResponseWriter has a deadline (a test recorder); the
	// server's ReadTimeout still holds.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(readBody))
	rd.macs.reset()
	body := http.MaxBytesReader(w, r.Body, MaxBody)
	buf := rd.buf[:0]
	for {
		if len(buf) == cap(buf) { // body never gives more than MaxBody, so room stays ≥ 1
			buf = slices.Grow(buf, min(max(len(buf), 4<<10), MaxBody+1-len(buf)))
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		rd.macs.write(buf[len(buf) : len(buf)+n])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			rd.buf = buf
			return buf, nil
		}
		if err != nil {
			rd.buf = buf
			return nil, err
		}
	}
}

func eventLabel(event string) string {
	switch event {
	case EventPing, EventRelease:
		return event
	}
	return EventOther
}
