// Package release is the shared vocabulary of the service: the wire types of
// GET /v1/craft_apps/release_info, the time format, the asset-name parser,
// what is known of one app (an Entry) and what operators decide about its
// releases (Decisions). It uses the standard library and the SemVer grammar
// (pkg/updates/semver) only, and does no I/O.
package release

import "time"

// MaxSkew is M, how far ahead of a reader's clock a time written by another
// process may be and still be believed: a fetch, failure or claim dated
// further ahead was written by a clock that runs fast (or by no poller at
// all), and reads as absent, so that it neither looks fresh nor blocks an
// honest write (docs/redis.md, "Time you cannot trust").
const MaxSkew = 30 * time.Second

// App is one configured app: its wire key, display name and GitHub
// repository; or, with Channel Prerelease, the internal entry that follows
// a configured app's pre-releases (App.PrereleaseEntry).
type App struct {
	Key  string // "photocraft": lowercase, the key of release_info.apps; an entry key for a channel's entry
	Name string // "PhotoCraft"
	Repo string // "storytold/photocraft": exactly org/project

	// Prereleases reports that the app has a pre-release channel
	// (CRAFT_APPS_RELEASE_PRERELEASE_APPS): its object on the wire has
	// latest_prerelease, from the entry PrereleaseEntry.
	Prereleases bool
	// Channel is which of the repository's releases the entry follows.
	Channel Channel
	// TagPrefix starts the app's tags ("artcraft-v"; "" for none,
	// CRAFT_APPS_RELEASE_TAG_PREFIXES): a release's version is its tag
	// without it (VersionOf).
	TagPrefix string
}

// Release is the latest release of an app, as launchers read it.
// Its JSON is the wire's "latest_release" object and also what Redis stores.
type Release struct {
	Tag           string  `json:"tag"`
	Version       string  `json:"version"`
	Name          string  `json:"name"`
	PublishedAt   *Time   `json:"published_at"`
	HTMLURL       string  `json:"html_url"`
	Prerelease    bool    `json:"prerelease"`
	NotesMarkdown string  `json:"notes_markdown"`
	Assets        []Asset `json:"assets"`
}

// Asset is one downloadable file of a release.
type Asset struct {
	Name        string    `json:"name"`
	SizeBytes   int64     `json:"size_bytes"`
	DownloadURL string    `json:"download_url"`
	SHA256      *string   `json:"sha256"`
	Platform    *Platform `json:"platform"`
}

// Platform is what an asset's file name says it runs on (see ParseAsset).
type Platform struct {
	OS          string  `json:"os"`
	Arch        *string `json:"arch"`
	PackageType string  `json:"package_type"`
}

// Asset returns r's asset of that name, and whether it has one; none of a
// nil release.
func (r *Release) Asset(name string) (Asset, bool) {
	if r != nil {
		for _, a := range r.Assets {
			if a.Name == name {
				return a, true
			}
		}
	}
	return Asset{}, false
}

// Entry is everything known of one app: its last successful fetch (or 304
// confirmation), its last failure, and its last claim. A zero time means never.
// Entries are values; Merge combines two of them under the merge law.
type Entry struct {
	FetchedAt time.Time // last fetch or 304 confirmation; zero: never fetched
	ETag      string    // GitHub's ETag verbatim, "" for none
	Release   *Release  // nil: never fetched, or the repository has no release
	// Companions are the release's companion assets fetched so far (nil:
	// none), part of the fetch: they belong to Release.
	Companions *Companions
	// History is, for an app's HistoryEntry, its newest releases with
	// their companions, part of the fetch (nil: never fetched, and always
	// for the other entries, whose Release is what they fetch).
	History *History

	FailedAt time.Time // last failed request; zero: never failed
	Failures int       // failures in a row as of FailedAt
	// NotFoundSince is when the run of 404s that ends at FailedAt began,
	// NotFound how many it holds; zero when the last failure was no 404.
	// A 404 only drops a release once the run is long enough (poller).
	NotFoundSince time.Time
	NotFound      int

	ClaimedAt time.Time // when a poller last started a request for the app
}

// Fetched reports whether the entry holds a fetch (a release or a known absence of one).
func (e Entry) Fetched() bool { return !e.FetchedAt.IsZero() }

// Failing reports whether the last thing that happened to the app was a failure:
// a failure newer than its last fetch, or a failure and never a fetch.
func (e Entry) Failing() bool {
	return !e.FailedAt.IsZero() && e.FailedAt.After(e.FetchedAt)
}

// Believed reports whether t, a time some clock wrote, may be believed by a
// reader whose clock says now: it is no more than MaxSkew ahead. A time
// further ahead was written by a clock that ran fast, or by a reader's own
// clock before it was set back (docs/redis.md, "Time you cannot trust").
func Believed(t, now time.Time) bool { return !t.After(now.Add(MaxSkew)) }

// Merge returns e updated with what is newer in o, judged by a reader whose
// clock says now: the fetch part (FetchedAt, ETag, Release, Companions,
// History) only when o's fetch is newer, with the companions of both (and
// those of both histories) when the two are the same fetch (SameFetch), the
// failure part (FailedAt, Failures, NotFoundSince,
// NotFound) only when o's failure is newer, the claim only when newer. A part
// of o is newer when it is strictly later, or when e's is not Believed at now
// and o's is: a time from the future is evidence of a wrong clock, not of a
// newer fetch, so it yields to any honest one. Otherwise nothing ever goes
// back in time or disappears.
func (e Entry) Merge(o Entry, now time.Time) Entry {
	sigs, hist := o.Companions, o.History
	if SameFetch(e, o) {
		sigs, hist = e.Companions.Union(o.Companions), e.History.Union(o.History)
		e.Companions, e.History = sigs, hist
	}
	if newer(o.FetchedAt, e.FetchedAt, now) {
		e.FetchedAt, e.ETag, e.Release, e.Companions, e.History = o.FetchedAt, o.ETag, o.Release, sigs, hist
	}
	if newer(o.FailedAt, e.FailedAt, now) {
		e.FailedAt, e.Failures, e.NotFoundSince, e.NotFound = o.FailedAt, o.Failures, o.NotFoundSince, o.NotFound
	}
	if newer(o.ClaimedAt, e.ClaimedAt, now) {
		e.ClaimedAt = o.ClaimedAt
	}
	return e
}

// SameFetch reports whether e and o hold the same fetch: fetched at the
// same millisecond (as Redis keeps times), with the same ETag, a release
// of the same tag (or none in both) and histories of the same tags (or none
// in both). Its companions may have been fetched by different pollers at
// different times; Merge keeps them all.
func SameFetch(e, o Entry) bool {
	if !e.Fetched() || !o.Fetched() || e.FetchedAt.UnixMilli() != o.FetchedAt.UnixMilli() || e.ETag != o.ETag ||
		(e.Release == nil) != (o.Release == nil) || !sameHistory(e.History, o.History) {
		return false
	}
	return e.Release == nil || e.Release.Tag == o.Release.Tag
}

// newer reports whether a part dated o replaces one dated e under Merge.
func newer(o, e, now time.Time) bool {
	return o.After(e) || (!o.IsZero() && !Believed(e, now) && Believed(o, now))
}

// Outcome classifies one answer from GitHub (docs/github.md, "Classifying the answer").
type Outcome int

// The outcomes of one GitHub request.
const (
	Failed      Outcome = iota // transport error, timeout, bad status or bad body
	NotModified                // 304: only the fetch time moves
	Fetched                    // 200 with a good release
	RateLimited                // 403/429 with a rate-limit signal
	NotFound                   // 404: no release, or a repository gone (the poller decides)
)

// String returns the outcome's lowercase name, used in logs and metric labels.
func (o Outcome) String() string {
	switch o {
	case NotModified:
		return "not_modified"
	case Fetched:
		return "fetched"
	case RateLimited:
		return "rate_limited"
	case NotFound:
		return "not_found"
	default:
		return "failed"
	}
}

// Answer is one classified answer from GitHub about one app.
type Answer struct {
	Outcome Outcome
	Release *Release // Fetched: the filtered release, or nil for a 404
	ETag    string   // Fetched: the new ETag ("" for a 404 or none)
	// Assets are, for a Fetched release, what fetching each kept asset's
	// bytes needs, by asset name (nil for none).
	Assets map[string]AssetRef
	// History is, for an app's HistoryEntry, the releases a Fetched list
	// held (never nil then), and HistoryAssets the asset refs of each, by
	// tag and then asset name.
	History       *History
	HistoryAssets map[string]map[string]AssetRef

	RetryAt time.Time // RateLimited: no request before this; zero when unknown
	Err     error     // Failed or RateLimited: why, never containing a token

	// Quota from the answer's x-ratelimit headers, when GitHub sent them
	// (Remaining is -1 when unknown).
	Remaining int
	Reset     time.Time
}
