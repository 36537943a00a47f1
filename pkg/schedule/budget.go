package schedule

import "time"

// Budget bounds the GitHub requests that refresh requests cost beyond the
// schedule: Burst at once, then one every Every. A Bucket holds what was
// spent; the pair is a token bucket kept as a single time (the generic cell
// rate algorithm), so that spending and asking are a comparison each.
type Budget struct {
	Burst int
	Every time.Duration
}

// The refresh budgets (docs/scheduling.md, "The refresh budget").
var (
	// AppBudget is one app's: a release and its three retries at once
	// (RefreshAt), then one request every 10 s, however many deliveries
	// name the app.
	AppBudget = Budget{Burst: 4, Every: 10 * time.Second}
	// FleetBudget is every app's together: a release of every app of a
	// dozen at once, then one request every 4 s (900 an hour, within the
	// fifth of the quota that pacing leaves free).
	FleetBudget = Budget{Burst: 16, Every: 4 * time.Second}
)

// Bucket is what a Budget has spent: the time at which it is whole again
// (zero: whole). Its zero value is a whole budget.
type Bucket struct {
	whole time.Time
}

// Next returns the earliest time at which a request fits the budget: now
// or before when it has room.
func (b Budget) Next(k Bucket) time.Time {
	if k.whole.IsZero() {
		return time.Time{}
	}
	return k.whole.Add(-time.Duration(b.Burst-1) * b.Every)
}

// Spend counts a request made at at, whether or not it fitted; what is owed
// never exceeds one whole budget past at, so requests made over it (by
// peers that had not seen each other yet) delay the next by at most that.
func (b Budget) Spend(k *Bucket, at time.Time) {
	k.whole = later(k.whole, at).Add(b.Every)
	if most := at.Add(time.Duration(b.Burst) * b.Every); k.whole.After(most) {
		k.whole = most
	}
}
