package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestConfigNeverPrintsSecrets prints loaded settings every way a program
// might, and looks for the token and the Redis password.
func TestConfigNeverPrintsSecrets(t *testing.T) {
	a, p := loadBoth(t, env(tokenVar, token, "REDIS_URL", redisURL, "CRAFT_APPS_RELEASE_WEBHOOK_SECRET", " "+webhookSecret+" , "+password+"2 ",
		"MYSQL_DSN", "craft:"+mysqlPassword+"@tcp(db:3306)/craft"))
	if a.GitHubToken.Reveal() != token || a.Redis.URL.Reveal() != redisURL || p.GitHubToken.Reveal() != token ||
		!strings.Contains(p.MySQL.DSN.Reveal(), mysqlPassword) || len(a.WebhookSecrets) != 2 || a.WebhookSecrets[0].Reveal() != webhookSecret || a.WebhookSecrets[1].Reveal() != password+"2" {
		t.Fatalf("settings do not hold the secrets; the test would prove nothing")
	}
	printed := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		printed["api "+verb] = fmt.Sprintf(verb, a)
		printed["&api "+verb] = fmt.Sprintf(verb, &a)
		printed["poller "+verb] = fmt.Sprintf(verb, p)
		printed["polling "+verb] = fmt.Sprintf(verb, a.Polling)
		printed["shared "+verb] = fmt.Sprintf(verb, a.Shared)
		printed["mysql "+verb] = fmt.Sprintf(verb, p.MySQL)
	}
	for name, v := range map[string]any{"api": a, "poller": p} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%s): %v", name, err)
		}
		printed["json "+name] = string(b)
	}
	printed["log api"] = logLine(t, zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), a.Fields()...)
	printed["log poller"] = logLine(t, zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), p.Fields()...)
	printed["log any"] = logLine(t, zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zap.Any("config", a))
	for name, out := range printed {
		for _, secret := range []string{token, password, webhookSecret, "s3cr"} { // s3cr: mysqlPassword, escaped or not
			if strings.Contains(out, secret) {
				t.Errorf("%s holds the secret %q:\n%s", name, secret, out)
			}
		}
	}
	if got := printed["api %+v"]; !strings.Contains(got, "GitHubToken:[redacted]") || !strings.Contains(got, "user:[redacted]@") {
		t.Errorf("%%+v of the settings = %s, want the token and the password as [redacted]", got)
	}
}

func TestFields(t *testing.T) {
	pub := testkit.NewMinisignKey(t).PublicKey()
	key, err := minisign.ParsePublicKey(pub)
	must(t, err)
	a, p := loadBoth(t, env(tokenVar, token, "REDIS_URL", redisURL, "CRAFT_APPS_RELEASE_WEBHOOK_SECRET", webhookSecret+",next",
		"CRAFT_APPS_RELEASE_APPS", "a=A=org/a,b=B=org/b", "CRAFT_APPS_RELEASE_TAG_PREFIXES", "b=b-v", "CRAFT_APPS_RELEASE_TAURI_PUBKEYS", "b="+pub))
	both := map[string]any{"redis_url": "redis://user:[redacted]@127.0.0.1:6379/0", "apps": []any{"a", "b"},
		"github_api_url": "https://api.github.com/", "log_level": "info", "log_format": "json", "polling_enabled": true,
		"coordination_enabled": true, "github_token_set": true, "poll_interval": "2m0s", "max_backoff": "4h0m0s",
		"startup_jitter": "30s", "tick": "30s", "request_spacing": "1s", "shutdown_timeout": "15s", "cloudflare_purge": false,
		"tag_prefixes": []any{"b=b-v"}, "tauri_pubkeys": []any{"b=" + key.KeyID.String()}}
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeDuration, cfg.TimeKey = zapcore.StringDurationEncoder, ""
	for name, tc := range map[string]struct {
		fields []zap.Field
		extra  map[string]any
	}{
		"api": {a.Fields(), map[string]any{"http_addr": ":8080", "metrics_addr": ":9090", "max_connections": float64(1024),
			"hydrate_timeout": "10s", "standalone": false, "webhook_secrets": float64(2)}},
		"poller": {p.Fields(), map[string]any{"http_addr": ":9090", "mysql": false, "mysql_max_connections": float64(4),
			"mysql_max_lifetime": "10m0s", "mysql_query_timeout": "5s", "mysql_poller_replicas": float64(3), "meta_refresh": "1m0s"}},
	} {
		var got map[string]any
		line := logLine(t, zapcore.NewJSONEncoder(cfg), tc.fields...)
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("read %s's log line %s: %v", name, line, err)
		}
		want := map[string]any{"level": "info", "msg": "settings"}
		maps.Copy(want, both)
		maps.Copy(want, tc.extra)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s's log line:\n got %v\nwant %v", name, got, want)
		}
	}
}

// loadBoth loads vars through LoadAPI and LoadPoller, failing the test on
// an error.
func loadBoth(t *testing.T, vars map[string]string) (config.API, config.Poller) {
	t.Helper()
	a, _, err := config.LoadAPI(lookup(vars))
	p, _, perr := config.LoadPoller(lookup(vars), checkDSN)
	must(t, errors.Join(err, perr))
	return a, p
}

// logLine logs one info line with fields through enc and returns it.
func logLine(t testing.TB, enc zapcore.Encoder, fields ...zap.Field) string {
	t.Helper()
	var buf bytes.Buffer
	log := zap.New(zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.DebugLevel))
	log.Info("settings", fields...)
	if err := log.Sync(); err != nil {
		t.Fatalf("sync log: %v", err)
	}
	return buf.String()
}

// webhookSecret is a webhook secret that must never be printed.
const webhookSecret = "whsec-Zq8vN2"
