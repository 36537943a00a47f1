package config_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/config"
)

const zone = "023e105f4ecef8ad9ca31a8372d0c353"

// TestCloudflare: the purge needs the token, the zone and the public URL,
// all three or none; a bad value stops the process naming the variable and
// never quoting the token.
func TestCloudflare(t *testing.T) {
	const token = "cf-s3cret-token"
	all := env("CLOUDFLARE_API_TOKEN", token, "CLOUDFLARE_ZONE_ID", zone, "CRAFT_APPS_PUBLIC_URL", "https://API.example.com/")
	set := func(kv ...string) map[string]string { m := maps.Clone(all); maps.Copy(m, env(kv...)); return m }
	good := []struct {
		name string
		vars map[string]string
		want config.Cloudflare
	}{
		{"none", nil, config.Cloudflare{APIURL: "https://api.cloudflare.com/client/v4/"}},
		{"all three", all, config.Cloudflare{Token: token, Zone: zone, APIURL: "https://api.cloudflare.com/client/v4/", PublicURL: "https://api.example.com"}},
		{"a fake API on loopback", set("CLOUDFLARE_API_URL", "http://127.0.0.1:9999/client/v4", "CRAFT_APPS_PUBLIC_URL", "http://127.0.0.1:8080"),
			config.Cloudflare{Token: token, Zone: zone, APIURL: "http://127.0.0.1:9999/client/v4/", PublicURL: "http://127.0.0.1:8080"}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			a, _, err := config.LoadAPI(lookup(tt.vars))
			if err != nil {
				t.Fatalf("LoadAPI: %v", err)
			}
			p, _, err := loadPoller(tt.vars)
			if err != nil {
				t.Fatalf("LoadPoller: %v", err)
			}
			if a.Cloudflare != tt.want || p.Cloudflare != tt.want {
				t.Errorf("got %+v (api), %+v (poller); want %+v", a.Cloudflare, p.Cloudflare, tt.want)
			}
			if a.Cloudflare.Enabled() != (tt.want.Token != "") {
				t.Errorf("Enabled() = %v", a.Cloudflare.Enabled())
			}
		})
	}
	bad := []struct {
		name, wantVar string
		vars          map[string]string
		mentions      string // "": anything
	}{
		{"token alone", "CLOUDFLARE_ZONE_ID", map[string]string{"CLOUDFLARE_API_TOKEN": token}, ""},
		{"no token", "CLOUDFLARE_API_TOKEN", set("CLOUDFLARE_API_TOKEN", ""), ""},
		{"no public url", "CRAFT_APPS_PUBLIC_URL", set("CRAFT_APPS_PUBLIC_URL", ""), ""},
		{"zone not hex", "CLOUDFLARE_ZONE_ID", set("CLOUDFLARE_ZONE_ID", "../../accounts"), ""},
		{"public url with a path", "CRAFT_APPS_PUBLIC_URL", set("CRAFT_APPS_PUBLIC_URL", "https://api.example.com/v1"), ""},
		{"public url not http", "CRAFT_APPS_PUBLIC_URL", set("CRAFT_APPS_PUBLIC_URL", "ftp://api.example.com"), ""},
		{"api url not a url", "CLOUDFLARE_API_URL", set("CLOUDFLARE_API_URL", "::"), ""},
		{"token in cleartext", "CLOUDFLARE_API_TOKEN", set("CLOUDFLARE_API_URL", "http://cloudflare.example/client/v4/"), ""},
		{"api url with credentials", "CLOUDFLARE_API_URL", set("CLOUDFLARE_API_URL", "https://me:"+token+"@api.cloudflare.com/client/v4/"),
			"set CLOUDFLARE_API_TOKEN"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, _, aErr := config.LoadAPI(lookup(tt.vars))
			_, _, pErr := loadPoller(tt.vars)
			for binary, err := range map[string]error{"api": aErr, "poller": pErr} {
				if err == nil || !strings.Contains(err.Error(), tt.wantVar+":") {
					t.Fatalf("%s: error %v, want one naming %s", binary, err, tt.wantVar)
				}
				if !strings.Contains(err.Error(), tt.mentions) {
					t.Errorf("%s: error %v, want one saying %q", binary, err, tt.mentions)
				}
				if strings.Contains(err.Error(), token) {
					t.Errorf("%s: error quotes the token: %v", binary, err)
				}
			}
		})
	}
}
