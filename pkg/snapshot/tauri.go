package snapshot

import (
	"reflect"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/semver"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
)

// Feed is one release's Tauri updater feed: the answer to every request an
// updater may send, and the static latest.json (docs/updates.md, "The
// answers"). It is rendered when the release or its signatures change, and
// an answer whose bytes did not change keeps its Doc. Nothing in it may be
// modified, since every reader shares it.
type Feed struct {
	app      string
	rel      *release.Release
	sigs     *release.Companions
	critical bool                     // every update says "critical": true
	offers   map[tauri.Request]*Offer // by tauri.AllRequests

	// Manifest is latest.json, or the 404 saying why there is none.
	Manifest *Offer
}

// Offer is one answer of a Feed: an update (Doc, served 200, or 204 to an
// updater that is not older) or, with Err, a 404 saying what is missing.
type Offer struct {
	// Doc is the update's JSON, served with CacheControlFetched, or
	// CacheControlUnfetched while it stands for a release whose signatures
	// are being fetched; zero for a 404.
	Doc
	Err string // the 404's error; "" for an update

	version semver.Version // the release's
	static  bool           // the Manifest: never a 204
}

// Newer reports whether o's update is newer than current, the version the
// updater runs (tauri.Update.Newer): the answer is then the 200, else the
// 204. The static latest.json is always newer.
func (o *Offer) Newer(current string) bool {
	return o.static || tauri.NewerThan(o.version, current)
}

// Offer returns f's answer to req. A request that tauri.AllRequests does
// not list (a target or arch the updater never sends), or any request of a
// release without a signed bundle, gets its 404, made now.
func (f *Feed) Offer(req tauri.Request) *Offer {
	req.BundleType = tauri.BundleType(req.BundleType)
	if o, ok := f.offers[req]; ok {
		return o
	}
	_, err := tauri.Offer(f.app, f.rel, nil, req) // a target or arch it refuses before reading signatures
	return &Offer{Err: err.Error()}
}

// renderFeed returns the feed of app's release rel with its signatures
// sigs, built on old (the feed it replaces, nil for none): old itself when
// neither changed (a release read again from Redis is a new pointer to an
// equal release), and old's answers where they are the same. A request
// that rel has a bundle for whose signature is not there yet
// (tauri.Awaiting) keeps what old offered, when that was an older release's
// update, so that an updater is not told "nothing" while the signatures of
// a new release are being fetched; such an answer is not cached.
func renderFeed(app string, old *Feed, rel *release.Release, sigs *release.Companions, critical bool) *Feed {
	if old != nil && sameRelease(old.rel, rel) && old.sigs.Equal(sigs) && old.critical == critical {
		return old
	}
	if len(tauri.Companions(rel)) == 0 {
		// Nothing signed to offer, as for apps that are not Tauri apps:
		// every answer is a 404, made when asked (Offer) rather than held
		// for every request an updater may send.
		if _, err := tauri.Static(app, rel, nil); err != nil {
			return &Feed{app: app, rel: rel, sigs: sigs, critical: critical, Manifest: &Offer{Err: err.Error()}}
		}
	}
	if old == nil {
		old = &Feed{}
	}
	m := sigs.Map()
	relVersion, hasSemVer := semver.Version{}, false
	if rel != nil {
		relVersion, hasSemVer = tauri.ParseVersion(rel.Version)
	}
	// carried reports whether prev, the old answer, may stand for a request
	// the new release has no signed bundle for yet.
	carried := func(prev *Offer, awaiting bool) bool {
		return awaiting && prev != nil && prev.Err == "" && hasSemVer && prev.version.Compare(relVersion) < 0
	}
	f := &Feed{app: app, rel: rel, sigs: sigs, critical: critical, offers: make(map[tauri.Request]*Offer)}
	made := map[string]*Offer{} // by the answer's bytes, or by the 404's error
	for _, req := range tauri.AllRequests() {
		prev := old.offers[req]
		u, err := tauri.Offer(app, rel, m, req)
		u.Critical = critical
		switch {
		case err == nil:
			f.offers[req] = offerOf(made, prev, mustMarshal(u), relVersion, false)
		case carried(prev, tauri.Awaiting(rel, m, req)):
			f.offers[req] = carry(made, prev)
		default:
			f.offers[req] = errorOffer(made, err.Error())
		}
	}
	switch manifest, err := tauri.Static(app, rel, m); {
	case err == nil:
		f.Manifest = offerOf(made, old.Manifest, mustMarshal(manifest), relVersion, true)
	case carried(old.Manifest, len(tauri.Companions(rel)) > 0):
		f.Manifest = carry(made, old.Manifest)
	default:
		f.Manifest = errorOffer(made, err.Error())
	}
	return f
}

// offerOf returns the update whose JSON is body: one already made in this
// rendering, prev when it has the same bytes and is cached, or a new one.
func offerOf(made map[string]*Offer, prev *Offer, body []byte, v semver.Version, static bool) *Offer {
	if o, ok := made[string(body)]; ok {
		return o
	}
	o := prev
	if o == nil || o.Err != "" || o.CacheControl != CacheControlFetched || string(o.Body()) != string(body) {
		o = &Offer{Doc: NewDoc(body, CacheControlFetched), version: v, static: static}
	}
	made[string(body)] = o
	return o
}

// carry returns prev, an older release's update kept while the new
// release's signatures are fetched, served no-store: a cache must not keep
// it past the purge that follows the signatures, which names the new
// release's version, not prev's (docs/updates.md, "The answers").
func carry(made map[string]*Offer, prev *Offer) *Offer {
	if prev.CacheControl == CacheControlUnfetched {
		return prev // carried already
	}
	key := "\x01" + string(prev.Body()) // no JSON body starts with SOH
	if o, ok := made[key]; ok {
		return o
	}
	o := &Offer{Doc: NewDoc(prev.Body(), CacheControlUnfetched), version: prev.version, static: prev.static}
	made[key] = o
	return o
}

// errorOffer returns the 404 of msg, one per message in a rendering.
func errorOffer(made map[string]*Offer, msg string) *Offer {
	key := "\x00" + msg // no JSON body starts with NUL
	if o, ok := made[key]; ok {
		return o
	}
	o := &Offer{Err: msg}
	made[key] = o
	return o
}

// sameRelease reports whether a and b are the same release: the same
// pointer, or equal in every field.
func sameRelease(a, b *release.Release) bool {
	return a == b || a != nil && b != nil && reflect.DeepEqual(*a, *b)
}
