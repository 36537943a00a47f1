package config

import (
	"net/url"
	"regexp"
	"strings"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/cloudflare"
	"github.com/storytold/craft-releases/pkg/secret"
)

// cloudflareEnv holds the variables of the purge on every release
// (docs/operations.md, "Cloudflare"). Both binaries read them: the pollers purge
// in a split deployment, the API standalone.
type cloudflareEnv struct {
	Token     string `env:"CLOUDFLARE_API_TOKEN" helpDefault:"(unset)" help:"an API token whose one permission is Zone / Cache Purge / Purge on the zone; with CLOUDFLARE_ZONE_ID and CRAFT_APPS_PUBLIC_URL, each release purges its answers from Cloudflare (split: the poller that fetched it; standalone: the API); unset: no purge"`
	Zone      string `env:"CLOUDFLARE_ZONE_ID" helpDefault:"(unset)" help:"the zone's id (32 hex digits, on the zone's overview page)"`
	APIURL    string `env:"CLOUDFLARE_API_URL" envDefault:"https://api.cloudflare.com/client/v4/" help:"Cloudflare's API, or a test fake"`
	PublicURL string `env:"CRAFT_APPS_PUBLIC_URL" helpDefault:"(unset)" help:"the service's public origin as launchers reach it through Cloudflare, such as https://api.example.com: the purged URLs start with it"`
}

// Cloudflare holds the settings of the purge on every release. Its zero
// value sends nothing.
type Cloudflare struct {
	Token     Secret // trimmed; empty: no purge
	Zone      string
	APIURL    string // an absolute http(s) URL ending with "/"
	PublicURL string // scheme and host, without a trailing "/"
}

// Enabled reports whether releases are purged from Cloudflare.
func (c Cloudflare) Enabled() bool { return c.Token != "" }

// Purger returns the settings as a Purger takes them; the caller adds its
// Observer, Logger and Delay.
func (c Cloudflare) Purger() cloudflare.Config {
	return cloudflare.Config{APIURL: c.APIURL, Zone: c.Zone, Token: c.Token, PublicURL: c.PublicURL}
}

func (c Cloudflare) fields() []zap.Field {
	if !c.Enabled() {
		return []zap.Field{zap.Bool("cloudflare_purge", false)}
	}
	return []zap.Field{zap.Bool("cloudflare_purge", true), zap.String("cloudflare_zone_id", c.Zone),
		zap.String("cloudflare_api_url", c.APIURL), zap.String("public_url", c.PublicURL)}
}

// zoneID is the form of a Cloudflare zone id.
var zoneID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// check reads the purge's settings: all three of the token, the zone and the
// public URL, or none. The errors never quote the token.
func (r cloudflareEnv) check(c *checker) Cloudflare {
	cf := Cloudflare{Token: Secret(r.Token), Zone: r.Zone}
	var err error
	if cf.APIURL, err = normalizeAPIURL(r.APIURL, "CLOUDFLARE_API_TOKEN"); err != nil {
		c.fail("CLOUDFLARE_API_URL", "%q %w", secret.MaskURL(r.APIURL), err)
	}
	if r.Token == "" && r.Zone == "" && r.PublicURL == "" {
		return Cloudflare{APIURL: cf.APIURL}
	}
	if r.Token == "" {
		c.fail("CLOUDFLARE_API_TOKEN", "unset, yet CLOUDFLARE_ZONE_ID or CRAFT_APPS_PUBLIC_URL is set: set all three to purge, or none")
	}
	switch {
	case r.Zone == "":
		c.fail("CLOUDFLARE_ZONE_ID", "unset, yet CLOUDFLARE_API_TOKEN or CRAFT_APPS_PUBLIC_URL is set: set all three to purge, or none")
	case !zoneID.MatchString(r.Zone):
		c.fail("CLOUDFLARE_ZONE_ID", "%q is not a zone id (32 hex digits, lowercase)", r.Zone)
	}
	if r.PublicURL == "" {
		c.fail("CRAFT_APPS_PUBLIC_URL", "unset, yet CLOUDFLARE_API_TOKEN or CLOUDFLARE_ZONE_ID is set: set all three to purge, or none")
	} else if cf.PublicURL, err = publicURL(r.PublicURL); err != nil {
		c.fail("CRAFT_APPS_PUBLIC_URL", "%q %w", secret.MaskURL(r.PublicURL), err)
	}
	if r.Token != "" && cleartext(cf.APIURL) {
		c.fail("CLOUDFLARE_API_TOKEN", "is set, and CLOUDFLARE_API_URL is http:// to a host that is not loopback: a token goes over cleartext only to loopback (use https://)")
	}
	return cf
}

// publicURL checks that s is the origin of the public URLs, http(s)://host
// with an optional port, and returns it without a trailing "/". The error
// does not repeat s.
func publicURL(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", errorString("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errorString("is not an http or https URL")
	case u.Host == "":
		return "", errorString("has no host")
	case u.User != nil:
		return "", errorString("must not hold credentials")
	case u.Path != "" && u.Path != "/", u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errorString("must be an origin, scheme and host only: the service's paths are served from its root")
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host), nil
}

// errorString is an error whose message is itself.
type errorString string

func (e errorString) Error() string { return string(e) }
