// Package webhook receives GitHub's signed webhook deliveries: it verifies
// the signature, reads the release event and decides which apps to refresh,
// then hands the request to a Fleet, which records it (in Redis for the
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
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/release"
)

// Limits of one delivery.
const (
	// MaxBody is the most of a body read; a longer one is answered 413.
	MaxBody = 1 << 20
	// maxDeliveryID bounds X-GitHub-Delivery, a GUID.
	maxDeliveryID = 100
	// fleetTimeout bounds the Fleet's work, well within GitHub's 10 s.
	fleetTimeout = 3 * time.Second
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

// Fleet records refresh requests.
type Fleet interface {
	// Deliver records a delivery under each of ids and, unless one of them
	// was recorded before, a refresh request r for each of apps. It reports
	// whether the delivery was new. An error means nothing may be assumed
	// recorded, and the ids are not remembered.
	Deliver(ctx context.Context, ids []string, apps []string, r release.Refresh) (bool, error)
}

// Observer counts deliveries, for metrics. It is called concurrently.
type Observer interface {
	// Delivery counts one delivery of event (EventPing, EventRelease or
	// EventOther) with its outcome.
	Delivery(event, outcome string)
}

// Config is what a Handler needs; Secrets, Apps and Fleet are required.
type Config struct {
	Secrets  []string      // one, or two while the secret is rotated
	Apps     []release.App // the configured apps
	Fleet    Fleet
	Observer Observer    // nil: none
	Log      *zap.Logger // nil: no logging
	Clock    clock.Clock // nil: clock.System
}

// Handler answers POST deliveries (see New). It is safe for concurrent use.
type Handler struct {
	c Config
}

// New returns the handler of the webhook route. It fails without a secret,
// or with an empty one, or without a Fleet.
func New(c Config) (*Handler, error) {
	if len(c.Secrets) == 0 || c.Fleet == nil {
		return nil, errors.New("new webhook: no secret or no fleet")
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
	return &Handler{c: c}, nil
}

// ServeHTTP answers one delivery: 413 for a body over MaxBody, 401 for a
// missing or wrong signature, 200 for a ping, 202 for a release event (its
// apps' refresh recorded, or "duplicate" for a delivery id or a body seen
// before: GitHub's redelivery, or a signed body replayed), 202
// "ignored" for any other event or a repository not served, 400 for a signed
// delivery without an id or with a release body that does not parse, and 503
// when the Fleet cannot record the request, so that GitHub shows it failed
// and it can be redelivered. Nothing is done unless the signature verifies.
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
	if r.ContentLength > MaxBody {
		return TooLarge, http.StatusRequestEntityTooLarge, answer{Error: "body too large"}
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return TooLarge, http.StatusRequestEntityTooLarge, answer{Error: "body too large"}
		}
		return Invalid, http.StatusBadRequest, answer{Error: "body unreadable"}
	}
	if !Verify(h.c.Secrets, raw, r.Header.Get(SignatureHeader)) {
		return BadSignature, http.StatusUnauthorized, answer{Error: "bad signature"}
	}
	switch event {
	case EventPing:
		return Accepted, http.StatusOK, answer{Status: "pong"}
	case EventOther:
		return Ignored, http.StatusAccepted, answer{Status: Ignored}
	}
	id := r.Header.Get(DeliveryHeader)
	if id == "" || len(id) > maxDeliveryID || !release.SafeName(id) {
		return Invalid, http.StatusBadRequest, answer{Error: "missing or malformed " + DeliveryHeader}
	}
	p, err := Parse(raw)
	if err != nil {
		return Invalid, http.StatusBadRequest, answer{Error: "release payload does not parse; is the content type application/json?"}
	}
	apps := Matching(h.c.Apps, p.Repo)
	if len(apps) == 0 {
		return Ignored, http.StatusAccepted, answer{Status: Ignored}
	}
	ctx, cancel := context.WithTimeout(r.Context(), fleetTimeout)
	defer cancel()
	// X-GitHub-Delivery is not signed: the body's hash makes a signed body
	// replayed under another id a duplicate too.
	sum := sha256.Sum256(raw)
	ids := []string{id, "sha256-" + hex.EncodeToString(sum[:])}
	first, err := h.c.Fleet.Deliver(ctx, ids, apps, release.Refresh{At: received, Tag: p.Hint()})
	if err != nil {
		h.c.Log.Warn("webhook delivery not recorded", zap.String("delivery", id), zap.Strings("apps", apps), zap.NamedError("err", err))
		return Unavailable, http.StatusServiceUnavailable, answer{Error: "unavailable, redeliver later"}
	}
	if !first {
		return Duplicate, http.StatusAccepted, answer{Status: Duplicate}
	}
	h.c.Log.Info("webhook refresh", zap.String("delivery", id), zap.String("action", p.Action),
		zap.Strings("apps", apps), zap.String("tag", p.Hint()))
	return Accepted, http.StatusAccepted, answer{Status: Accepted, Apps: apps}
}

func eventLabel(event string) string {
	switch event {
	case EventPing, EventRelease:
		return event
	}
	return EventOther
}
