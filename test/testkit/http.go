package testkit

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// Client neither adds nor strips Accept-Encoding, so that each test picks
// the representation it asks for and reads the answer as sent, and does
// not follow redirects, which are answers to check.
var Client = &http.Client{
	Transport:     &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 8},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

// Ask sends GET url with client (Client when nil) and the header pairs given
// (name, value, …; a pair with an empty value is not sent, as by a client
// that has no such header), and returns the answer with its body read whole.
func Ask(client *http.Client, url string, header ...string) (*http.Response, []byte, error) {
	if client == nil {
		client = Client
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] != "" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, nil, err
	}
	return res, body, nil
}

// Get is Ask with Client that fails the test on error.
func Get(t testing.TB, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	res, body, err := Ask(nil, url, header...)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return res, body
}

// infos holds the release_info answers decoded last: tests that wait ask
// the pods every few milliseconds for bytes that mostly did not change.
var infos = NewMemo(64, func(body []byte) (release.Info, error) {
	var info release.Info
	err := json.Unmarshal(body, &info)
	return info, err
})

// DecodeInfo decodes a release_info answer; what it returns may be shared
// with other callers and must not be changed.
func DecodeInfo(body []byte) (release.Info, error) { return infos.Of(body) }

// Decode is DecodeInfo that fails the test on error.
func Decode(t testing.TB, body []byte) release.Info {
	t.Helper()
	info, err := DecodeInfo(body)
	if err != nil {
		t.Fatalf("decode %.200q: %v", body, err)
	}
	return info
}
