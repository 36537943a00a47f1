package poller

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/pkg/updates/companion"
)

// CompanionSource fetches a release's companion assets: the Source's second
// method, needed when Config.Companions is set.
type CompanionSource interface {
	// Companion fetches the bytes of asset ref of app's repository, at most
	// limit of them, classified as Latest's answers are (Fetched with the
	// bytes, or why not), with the quota the answer announced.
	Companion(ctx context.Context, app release.App, ref release.AssetRef, limit int64) ([]byte, release.Answer)
}

// CompanionObserver is told of each companion request, for metrics, when the
// Config's Observer implements it.
type CompanionObserver interface {
	// Companion reports a companion request about app and how it ended
	// (CompanionStored, CompanionRefused, CompanionFailed or
	// CompanionRateLimited), with GitHub's answer and its quota.
	Companion(app, outcome string, a release.Answer)
}

// How a companion request ended, as told to a CompanionObserver.
const (
	CompanionStored      = "stored"       // checked and kept
	CompanionRefused     = "refused"      // fetched, but refused as its client would (a .sig by another key…)
	CompanionFailed      = "failed"       // no bytes: an error, a 404, a bound or a digest
	CompanionRateLimited = "rate_limited" // GitHub's rate limit: the round stops
)

// companionRefs are the asset refs of the release an app's last 200 was
// about: what fetching its companions needs.
type companionRefs struct {
	tag     string
	refs    map[string]release.AssetRef
	refused map[string]bool // names whose bytes were refused: not asked again before the next 200
	// failed holds, for each name whose last request failed, its failures
	// in a row and when it may be asked again (on p.timer): after
	// Timing.RetryWait, as an app's own retry.
	failed map[string]companionRetry
}

// companionRetry is a companion's failures in a row and when it may be
// asked again.
type companionRetry struct {
	failures int
	at       time.Time
}

// keep returns the companions of was that still belong to rel, the release
// a new answer brought: those of a release with was's tag whose asset is
// unchanged. Any other release has none yet.
func keep(was *release.Release, sigs *release.Companions, rel *release.Release) *release.Companions {
	if was == nil || rel == nil || was.Tag != rel.Tag || sigs == nil {
		return nil
	}
	return sigs.Keep(func(name string) bool {
		a, okA := was.Asset(name)
		b, okB := rel.Asset(name)
		return okA && okB && sameAsset(a, b)
	})
}

func sameAsset(a, b release.Asset) bool {
	return a.Name == b.Name && a.SizeBytes == b.SizeBytes && a.DownloadURL == b.DownloadURL &&
		(a.SHA256 == nil) == (b.SHA256 == nil) && (a.SHA256 == nil || *a.SHA256 == *b.SHA256)
}

// companions fetches the companions of app's release that its entry lacks,
// when the last 200 this poller had about the app named their asset ids
// (docs/github.md, "Companion assets"), and keeps them with the entry
// (storeCompanions); for a history entry, those of its releases
// (historyCompanions). It reports whether the round must stop: a rate limit
// or a cancelled ctx.
func (p *Poller) companions(ctx context.Context, app release.App, r *round) (stop bool) {
	if app.Channel == release.HistoryChannel {
		return p.historyCompanions(ctx, app, r)
	}
	e := p.entries[app.Key]
	if p.companionsOf == nil || e.Release == nil || r.held {
		return false
	}
	refs := p.refs[app.Key]
	if refs.tag != e.Release.Tag {
		return false
	}
	got, stop := p.fetchCompanions(ctx, app, e.Release, e.Companions, &refs, r)
	p.refs[app.Key] = refs
	p.storeCompanions(ctx, app.Key, e, got, r)
	return stop
}

// fetchCompanions fetches the companions of rel, a release of app, that
// have lacks and refs names: spaced and counted like every request of round
// r, each checked as its client reads it (companion.Check: a .sig by the
// app's key when it has one) before it is kept. A companion that fails is
// asked again after the per-app retry's wait (Timing.RetryWait), one
// refused only after the next 200 (both noted in refs); the release is
// served meanwhile. It returns the texts kept, by name, and whether the
// round must stop: a rate limit or a cancelled ctx.
func (p *Poller) fetchCompanions(ctx context.Context, app release.App, rel *release.Release, have *release.Companions,
	refs *companionRefs, r *round) (got map[string]string, stop bool) {
	got = map[string]string{}
	names := p.companionsOf(rel)
	for _, name := range names[:min(len(names), release.MaxCompanions)] {
		ref, ok := refs.refs[name]
		if _, had := have.Get(name); had || !ok || refs.refused[name] || p.timer.Now().Before(refs.failed[name].at) {
			continue
		}
		if p.backoff.Active(p.clock.Now()) || !p.space(ctx, r) {
			return got, true
		}
		r.asked++
		r.spaced = false
		body, a := p.csrc.Companion(ctx, app, ref, companion.Limit(rel, name))
		if ctx.Err() != nil {
			return got, true
		}
		now := p.clock.Now()
		p.pace.learn(a, now)
		outcome := CompanionFailed
		switch a.Outcome {
		case release.Fetched:
			text, err := p.check(app.Key, rel, name, body)
			if err != nil {
				outcome = CompanionRefused
				refs.hold(name)
				p.log.Warn("companion refused", zap.String("app", app.Key), logsafe.String("asset", name),
					logsafe.String("tag", rel.Tag), logsafe.NamedError("err", err))
				break
			}
			outcome, got[name] = CompanionStored, text
		case release.RateLimited:
			p.tellCompanion(app.Key, CompanionRateLimited, a)
			r.sum.RateLimited, r.sum.RetryAt = true, a.RetryAt
			p.log.Warn("github rate limit", zap.String("app", app.Key), zap.String("repo", app.Repo),
				zap.Time("retry_at", a.RetryAt), logsafe.NamedError("err", a.Err))
			return got, true
		case release.NotFound:
			// The asset is gone: the release changed, and its 200 will tell.
			refs.hold(name)
			p.log.Warn("companion request failed", zap.String("app", app.Key), logsafe.String("asset", name),
				logsafe.NamedError("err", a.Err))
		default:
			refs.retryLater(name, p.timer.Now(), p.timing)
			p.log.Warn("companion request failed", zap.String("app", app.Key), logsafe.String("asset", name),
				logsafe.NamedError("err", a.Err))
		}
		p.tellCompanion(app.Key, outcome, a)
	}
	return got, false
}

// needsRefs reports whether e, app's entry, holds a release with
// companions missing whose asset ids this poller does not know (it did not
// have the 200: it started since, or another poller fetched the release):
// the next request about the app is then unconditional, so that its 200
// names them.
func (p *Poller) needsRefs(key string, e release.Entry) bool {
	if e.History != nil {
		return p.needsHistoryRefs(key, e)
	}
	if p.companionsOf == nil || e.Release == nil || p.refs[key].tag == e.Release.Tag {
		return false
	}
	names := p.companionsOf(e.Release)
	for _, name := range names[:min(len(names), release.MaxCompanions)] {
		if _, ok := e.Companions.Get(name); !ok {
			return true
		}
	}
	return false
}

// hold keeps name, a companion of the release refs names, from being asked
// for again before the next 200 about its app.
func (refs *companionRefs) hold(name string) {
	if refs.refused == nil {
		refs.refused = map[string]bool{}
	}
	refs.refused[name] = true
}

// retryLater counts a failure at now of name, a companion of the release
// refs names, and keeps it from being asked again before Timing.RetryWait
// of its failures in a row has passed.
func (refs *companionRefs) retryLater(name string, now time.Time, t schedule.Timing) {
	if refs.failed == nil {
		refs.failed = map[string]companionRetry{}
	}
	n := refs.failed[name].failures + 1
	refs.failed[name] = companionRetry{failures: n, at: now.Add(t.RetryWait(n))}
}

// check reads body, the companion name of rel, as its client reads it
// (companion.Check), a .sig by the public key of the app that entry key
// belongs to when it has one. It returns the text to keep.
func (p *Poller) check(key string, rel *release.Release, name string, body []byte) (string, error) {
	app, _ := release.AppOf(key)
	var pub *minisign.PublicKey
	if k, ok := p.pubkeys[app]; ok {
		pub = &k
	}
	return companion.Check(rel, name, body, pub)
}

// storeCompanions adds the companions got to e, app's entry when they were
// asked for, shares the entry (a fetch write of the same fetch, which keeps
// the companions already shared) and merges it. It then
// tells Config.Changes when that changed what is served, as remember does:
// as the shared write said or, without a Fleet, always, since got holds
// only companions e lacked.
func (p *Poller) storeCompanions(ctx context.Context, key string, e release.Entry, got map[string]string, r *round) {
	if len(got) == 0 {
		return
	}
	e.Companions = e.Companions.Union(release.NewCompanions(got))
	changed := p.fleet == nil
	if r.mode != Standalone && p.fleet != nil && ctx.Err() == nil {
		p.put(ctx, OpPutFetch, p.publishFetch(&changed), key, e, r)
	}
	p.merge(key, e)
	if changed && p.changes != nil {
		p.changes(key, e.Release, e.Release)
	}
}

func (p *Poller) tellCompanion(key, outcome string, a release.Answer) {
	if o, ok := p.obs.(CompanionObserver); ok {
		o.Companion(key, outcome, a)
	}
}

// errNoCompanionSource is New's error for Companions without a source of them.
var errNoCompanionSource = errors.New("new poller: companions without a source of them (CompanionSource)")
