package e2e

import (
	byteorder "encoding/binary" // beside func binary
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

// nginxConf is a shared cache in front of the pods that follows only the
// origin's headers: no proxy_cache_valid, no proxy_ignore_headers, no
// proxy_cache_use_stale, so what it keeps, for how long, per which Vary,
// and what it serves stale is what Cache-Control says (nginx honours
// stale-while-revalidate and stale-if-error since 1.11.10). The fake
// Cloudflare's purge deletes a URL's cache files, every variant of it, as
// nginx's own docs suggest for the open-source build, which has no purge.
// X-Cache-Status says what the cache did.
const nginxConf = `%s
daemon off;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	proxy_cache_path %[2]s/cache levels=1:2 keys_zone=craft:1m inactive=1d;
	upstream pods {
%[3]s	}
	server {
		listen %[4]s;
		location / {
			proxy_pass http://pods;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_cache craft;
			proxy_cache_key $scheme$proxy_host$request_uri;
			add_header X-Cache-Status $upstream_cache_status always;
		}
	}
}
`

// cache is an nginx proxy_cache in front of the pods.
type cache struct {
	base string // "http://" and its address
	dir  string // of its cache files
}

// startNginx starts nginx with its files in a directory of the test's, in
// front of pods, and waits until it answers. It is stopped with the test.
func startNginx(t testing.TB, pods []*proc) *cache {
	t.Helper()
	dir := t.TempDir()
	addr := testkit.FreeAddr(t)
	var upstreams strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&upstreams, "\t\tserver %s;\n", strings.TrimPrefix(p.base, "http://"))
	}
	user := "" // nginx ignores user unless it runs as root, when workers would become nobody
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, user, dir, upstreams.String(), addr), 0o600); err != nil {
		t.Fatal(err)
	}
	// The test task installs Debian's package, whose binary is in /usr/sbin,
	// which a user's PATH may lack.
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			t.Fatal("nginx not found (the test task installs it: apt-get install nginx)")
		}
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", "stderr")
	cmd.Env = []string{}
	p := spawn(t, "nginx", cmd)
	// SIGINT is nginx's fast stop; its exit status is not ours to check.
	t.Cleanup(func() { p.reap(t, func() error { return p.cmd.Process.Signal(os.Interrupt) }) })
	c := &cache{base: "http://" + addr, dir: filepath.Join(dir, "cache")}
	testkit.Eventually(t, "nginx answers", func() bool {
		select {
		case <-p.exited:
			t.Fatalf("nginx exited: %v\n%s", p.err, p.logs)
		default:
		}
		_, err := ask(c.base + "/healthz")
		return err == nil
	})
	return c
}

func (c *cache) get(t testing.TB, path string, header ...string) answer {
	t.Helper()
	return fetch(t, c.base+path, header...)
}

// purge deletes the cached copies of urls, every variant (each
// Accept-Encoding) of each: what Cloudflare's purge by URL does. A cache
// file names its key on a line "KEY: …" of its header.
func (c *cache) purge(t testing.TB, urls []string) {
	keys := map[string]bool{}
	for _, u := range urls {
		path, ok := strings.CutPrefix(u, c.base)
		if !ok {
			t.Errorf("purged %s, which is not behind the cache at %s", u, c.base)
			continue
		}
		keys["\nKEY: httppods"+path+"\n"] = true
	}
	err := filepath.WalkDir(c.dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		head, _, _ := strings.Cut(string(b[:min(len(b), 4096)]), "\r\n\r\n")
		for k := range keys {
			if strings.Contains(head+"\n", k) {
				return os.Remove(path)
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("purge the cache files: %v", err)
	}
}

// The fields of an nginx cache file's header (ngx_http_file_cache_header_t
// of a 64-bit build, version 5 since nginx 1.7.3) that say how fresh its
// copy is: seconds since the epoch, or a number of seconds, each 8 bytes.
const (
	cacheHeaderVersion = 5
	offValid           = 8  // valid_sec: fresh until
	offUpdating        = 16 // updating_sec: stale-while-revalidate
	offError           = 24 // error_sec: stale-if-error
	offDate            = 40 // date: stored at
)

// expire makes every cached copy stale by past, as if it was stored its
// max-age and past ago: it moves back when each cache file says its copy was
// stored and until when it is fresh, which nginx reads again on every
// request. It checks first that each copy keeps what the origin's
// Cache-Control said (a max-age, 30 s stale while revalidating, a day stale
// on error), and returns the max-ages it found, in seconds.
func (c *cache) expire(t testing.TB, past time.Duration) []int64 {
	t.Helper()
	var maxAges []int64
	err := filepath.WalkDir(c.dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		var h [offDate + 8]byte
		if _, err := f.ReadAt(h[:], 0); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		field := func(off int) int64 { return int64(byteorder.LittleEndian.Uint64(h[off:])) }
		if v := field(0); v != cacheHeaderVersion {
			return fmt.Errorf("%s: cache file version %d, want %d", path, v, cacheHeaderVersion)
		}
		maxAge, swr, sie := field(offValid)-field(offDate), field(offUpdating), field(offError)
		if maxAge <= 0 || swr != 30 || sie != 86400 {
			return fmt.Errorf("%s: fresh %d s, stale while revalidating %d s, stale on error %d s; want a max-age, 30, 86400 (the origin's Cache-Control)", path, maxAge, swr, sie)
		}
		valid := time.Now().Add(-past).Unix()
		byteorder.LittleEndian.PutUint64(h[offValid:], uint64(valid))
		byteorder.LittleEndian.PutUint64(h[offDate:], uint64(valid-maxAge))
		maxAges = append(maxAges, maxAge)
		_, err = f.WriteAt(h[:], 0)
		return err
	})
	if err != nil {
		t.Fatalf("expire the cache files: %v", err)
	}
	if len(maxAges) == 0 {
		t.Fatal("expire the cache files: none in " + c.dir)
	}
	return maxAges
}
