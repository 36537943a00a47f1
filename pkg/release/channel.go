package release

import "strings"

// Channel is which of an app's releases an entry follows (docs/wire.md,
// "The pre-release channel").
type Channel string

// The channels.
const (
	// Stable is an app's latest release, GitHub's releases/latest: never a
	// draft nor a prerelease.
	Stable Channel = ""
	// Prerelease is an app's newest pre-release, read from the first page of
	// its release list.
	Prerelease Channel = "prerelease"
	// HistoryChannel is an app's newest releases (History), read from the same
	// list; the pollers ask for it only while operators have decided
	// something about the app (docs/scheduling.md, "Release history").
	HistoryChannel Channel = "history"
)

// prereleaseSuffix ends the key of a pre-release entry. An app's key cannot
// hold ':' (SafeName), so no app's key is ever an entry key of another.
const (
	prereleaseSuffix = ":prerelease"
	historySuffix    = ":history"
)

// PrereleaseEntry returns the internal entry that follows a's pre-releases:
// its key is a's with ":prerelease" appended, its channel Prerelease, its
// repository and tag prefix a's.
func (a App) PrereleaseEntry() App {
	return App{Key: a.Key + prereleaseSuffix, Name: a.Name, Repo: a.Repo, Channel: Prerelease, TagPrefix: a.TagPrefix}
}

// HistoryEntry returns the internal entry that holds a's release history:
// its key is a's with ":history" appended, its channel HistoryChannel, its
// repository and tag prefix a's.
func (a App) HistoryEntry() App {
	return App{Key: a.Key + historySuffix, Name: a.Name, Repo: a.Repo, Channel: HistoryChannel, TagPrefix: a.TagPrefix}
}

// Entries returns the entries the pollers keep for apps, in order: each app,
// followed by its PrereleaseEntry when it has a pre-release channel, then
// by its HistoryEntry. Every app has a history entry; the pollers fill only
// those of apps with decisions, and the API pods read the others as absent
// keys (docs/scheduling.md, "Release history").
func Entries(apps []App) []App {
	out := make([]App, 0, 2*len(apps))
	for _, a := range apps {
		out = append(out, a)
		if a.Prereleases {
			out = append(out, a.PrereleaseEntry())
		}
		out = append(out, a.HistoryEntry())
	}
	return out
}

// Requests returns the GitHub requests a round of apps costs while no app
// has decisions: one for each app and one more for each pre-release
// channel, the entries of Entries but the history entries, which the
// pollers ask about only for apps with decisions.
func Requests(apps []App) int {
	n := 0
	for _, a := range apps {
		n++
		if a.Prereleases {
			n++
		}
	}
	return n
}

// Keys returns the keys of apps, in order.
func Keys(apps []App) []string {
	keys := make([]string, len(apps))
	for i, a := range apps {
		keys[i] = a.Key
	}
	return keys
}

// AppOf returns the key of the configured app that entry key belongs to, and
// the channel the entry follows: "photocraft:prerelease" is photocraft's
// pre-release entry, "photocraft:history" its history entry, any other key
// the app itself.
func AppOf(key string) (app string, ch Channel) {
	if app, ok := strings.CutSuffix(key, prereleaseSuffix); ok {
		return app, Prerelease
	}
	if app, ok := strings.CutSuffix(key, historySuffix); ok {
		return app, HistoryChannel
	}
	return key, Stable
}

// LatestPrerelease returns what latest_prerelease shows of pre, the newest
// pre-release its entry holds, beside stable, the latest release: pre when it
// is a prerelease with a published_at that is after stable's (any, when
// there is no stable release or it has no published_at); else nil.
func LatestPrerelease(stable, pre *Release) *Release {
	switch {
	case pre == nil || !pre.Prerelease || pre.PublishedAt == nil:
		return nil
	case stable == nil || stable.PublishedAt == nil || pre.PublishedAt.After(stable.PublishedAt.Time):
		return pre
	}
	return nil
}
