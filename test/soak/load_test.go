package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/testkit"
)

const (
	infoPath = "/v1/craft_apps/release_info"

	// The load: workersPerPod loops per pod, each asking every loadPace,
	// so at most 3 × workersPerPod / loadPace answers a second, on loopback,
	// for as long as the soak runs.
	workersPerPod = 2
	loadPace      = 100 * time.Millisecond
)

var (
	// defaultClient asks for gzip and decodes it, as most launchers do;
	// identityClient asks for the plain body.
	defaultClient  = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	identityClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 4}}
)

func idleLoadClients() {
	defaultClient.CloseIdleConnections()
	identityClient.CloseIdleConnections()
}

// podAnswer is one answer of a pod to the load.
type podAnswer struct {
	Pod     string
	Start   time.Time
	End     time.Time
	Status  int
	Bad     string         // why the answer is not valid; "" when it is
	Tags    map[string]int // app → release number served, 0 for none
	Fetched map[string]time.Time
}

// load asks every pod with workersPerPod loops until ctx ends.
func (s *soak) load(ctx context.Context) {
	var wg sync.WaitGroup
	for _, p := range s.pods {
		for w := range workersPerPod {
			client := defaultClient
			if w%2 == 1 {
				client = identityClient
			}
			wg.Go(func() {
				every(ctx, loadPace, func() {
					a := s.ask(client, p)
					s.mu.Lock()
					s.answers = append(s.answers, a)
					s.mu.Unlock()
				})
			})
		}
	}
	wg.Wait()
}

// ask sends one request to pod p and judges the answer.
func (s *soak) ask(client *http.Client, p *proc) podAnswer {
	a := podAnswer{Pod: p.name, Start: time.Now()}
	answer, status, err := fetchInfo(client, p)
	a.End, a.Status = time.Now(), status
	if err != nil {
		a.Bad = err.Error()
		return a
	}
	info := answer.info
	s.mu.Lock()
	latest := maps.Clone(s.latest)
	s.mu.Unlock()
	a.Tags, a.Fetched = make(map[string]int, len(apps)), make(map[string]time.Time, len(apps))
	if len(info.ReleaseInfo.Apps) != len(apps) {
		a.Bad = fmt.Sprintf("%d apps listed, want %d", len(info.ReleaseInfo.Apps), len(apps))
	}
	for _, app := range apps {
		ai, ok := info.ReleaseInfo.Apps[app.Key]
		switch {
		case !ok:
			a.Bad = "app " + app.Key + " missing"
		case ai.Name != app.Name || ai.Repo != app.Repo:
			a.Bad = fmt.Sprintf("app %s listed as %q %q", app.Key, ai.Name, ai.Repo)
		case ai.LatestRelease == nil:
			a.Bad = "app " + app.Key + " has no release"
		case numberOf(ai.LatestRelease.Tag) == 0 || numberOf(ai.LatestRelease.Tag) > latest[app.Key]:
			a.Bad = fmt.Sprintf("app %s serves %q, which was never published", app.Key, ai.LatestRelease.Tag)
		case ai.AppLastFetched == nil:
			a.Bad = "app " + app.Key + " has a release and no app_last_fetched"
		case len(ai.LatestRelease.Assets) == 0:
			a.Bad = "app " + app.Key + " has a release without assets"
		case answer.untrusted[app.Key] != nil: // verified against ai.Repo, which is app.Repo
			a.Bad = fmt.Sprintf("app %s serves a release that fails the trust check: %v", app.Key, answer.untrusted[app.Key])
		default:
			a.Tags[app.Key] = numberOf(ai.LatestRelease.Tag)
			a.Fetched[app.Key] = ai.AppLastFetched.Time
		}
	}
	return a
}

// fetchInfo GETs the endpoint and decodes it; anything but a 200 with a JSON
// body that decodes is an error.
func fetchInfo(client *http.Client, p *proc) (*decodedAnswer, int, error) {
	res, err := client.Get(p.base + infoPath)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return nil, res.StatusCode, fmt.Errorf("read the body: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, res.StatusCode, fmt.Errorf("status %d: %.200s", res.StatusCode, body)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return nil, res.StatusCode, fmt.Errorf("content type %q", ct)
	}
	answer, err := decoded.Of(body)
	if err != nil {
		return nil, res.StatusCode, fmt.Errorf("decode %.200q: %w", body, err)
	}
	if !answer.info.Success {
		return nil, res.StatusCode, fmt.Errorf("success is false")
	}
	return answer, res.StatusCode, nil
}

func getInfo(client *http.Client, p *proc) (release.Info, error) {
	answer, _, err := fetchInfo(client, p)
	if err != nil {
		return release.Info{}, err
	}
	return answer.info, nil
}

// decodedAnswer is what the bytes of an answer say: read-only once made.
type decodedAnswer struct {
	info      release.Info
	untrusted map[string]error // app key → why release.Verify refuses its release
}

// decoded holds the answers decoded last (each some 100 KB), more than the
// pods serve at once between two releases: the load asks each pod ten times
// a second for bytes that mostly did not change since.
var decoded = testkit.NewMemo(64, decodeAnswer)

// decodeAnswer decodes body, each app's release verified against the
// repository the answer lists for it.
func decodeAnswer(body []byte) (*decodedAnswer, error) {
	answer := &decodedAnswer{untrusted: make(map[string]error)}
	if err := json.Unmarshal(body, &answer.info); err != nil {
		return nil, err
	}
	for key, ai := range answer.info.ReleaseInfo.Apps {
		if err := release.Verify(release.App{Key: key, Repo: ai.Repo}, ai.LatestRelease); err != nil {
			answer.untrusted[key] = err
		}
	}
	return answer, nil
}

// servesAll reports whether info serves at least release n of every app.
func servesAll(info release.Info, n int) bool {
	for _, a := range apps {
		ai := info.ReleaseInfo.Apps[a.Key]
		if ai.LatestRelease == nil || numberOf(ai.LatestRelease.Tag) < n {
			return false
		}
	}
	return true
}

// servesLatest reports whether info serves release latest[app] of every app.
func servesLatest(info release.Info, latest map[string]int) bool {
	for _, a := range apps {
		ai := info.ReleaseInfo.Apps[a.Key]
		if ai.LatestRelease == nil || numberOf(ai.LatestRelease.Tag) < latest[a.Key] {
			return false
		}
	}
	return true
}
