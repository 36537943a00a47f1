package electron_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/electron"
	"github.com/storytold/craft-releases/test/testkit"
)

// stageSum is a sha512 as electron-builder writes it, for the staged files.
const stageSum = "3BMEl+PHlCsJyDy0GOHXOyu9B5MuaDBYAUAYI0XeMLBBU1q4rUlGnZOsM9oFR+MMPbcCmnbXSYhvc71fSWLyQA=="

// Channel files as served: electron-builder's layout (block), a
// hand-written one (braces), each with and without a staged rollout.
const (
	stageHead = "version: 1.4.0\nfiles:\n  - url: https://github.com/storytold/craft/releases/download/v1.4.0/Craft-Setup-1.4.0.exe\n    sha512: " + stageSum + "\n    size: 81234567\n"
	stageTail = "path: https://github.com/storytold/craft/releases/download/v1.4.0/Craft-Setup-1.4.0.exe\nsha512: " + stageSum + "\nreleaseDate: '2026-11-02T10:11:12.345Z'\n"
	stageFile = stageHead + stageTail
	stageFlow = "{version: 1.4.0, files: [{url: Craft-Setup-1.4.0.exe, sha512: " + stageSum + "}], minimumSystemVersion: '10.0'}"
)

func TestStage(t *testing.T) {
	tests := []struct {
		name, body string
		percent    int
		want, err  string // err: a piece of Stage's error, for a file or percentage it refuses
	}{
		{"written before the first key", stageFile, 10, "stagingPercentage: 10\n" + stageFile, ""},
		{"none", stageFile, 0, "stagingPercentage: 0\n" + stageFile, ""},
		{"everyone, nothing staged", stageFile, 100, stageFile, ""},
		{"the publisher's replaced", stageHead + "stagingPercentage: 50\n" + stageTail, 25, stageHead + "stagingPercentage: 25\n" + stageTail, ""},
		{"the publisher's removed", stageHead + "stagingPercentage: 50 # half\n" + stageTail, 100, stageFile, ""},
		{"removed on its two lines", stageHead + "stagingPercentage:\n  50\n" + stageTail, 100, stageFile, ""},
		{"removed on the last line", stageFile + "stagingPercentage: 50", 100, stageFile, ""},
		{"replaced on the next line", stageFile + "stagingPercentage:\n  50\n", 5, stageFile + "stagingPercentage:\n  5\n", ""},
		{"an empty null given a value", stageFile + "stagingPercentage: # later\n", 5, stageFile + "stagingPercentage: 5 # later\n", ""},
		{"an empty null at the end", stageFile + "stagingPercentage:", 5, stageFile + "stagingPercentage: 5", ""},
		{"a null given a value", stageFile + "stagingPercentage: ~\n", 5, stageFile + "stagingPercentage: 5\n", ""},
		{"a null is everyone", stageFile + "stagingPercentage: null\n", 100, stageFile + "stagingPercentage: null\n", ""},
		{"comments and a document start before", "# built by electron-builder\n---\n" + stageFile, 10, "# built by electron-builder\n---\nstagingPercentage: 10\n" + stageFile, ""},
		{"CR LF", strings.ReplaceAll(stageFile, "\n", "\r\n"), 10, "stagingPercentage: 10\r\n" + strings.ReplaceAll(stageFile, "\n", "\r\n"), ""},
		{"indented", indent(stageFile), 10, indent("stagingPercentage: 10\n" + stageFile), ""},
		{"braces", stageFlow, 10, "{stagingPercentage: 10, " + stageFlow[1:], ""},
		{"braces, replaced", strings.Replace(stageFlow, "{", "{stagingPercentage: 50, ", 1), 10, strings.Replace(stageFlow, "{", "{stagingPercentage: 10, ", 1), ""},
		{"braces, everyone", strings.Replace(stageFlow, "{", "{stagingPercentage: 50, ", 1), 100, strings.Replace(stageFlow, "{", "{stagingPercentage: null, ", 1), ""},

		{"below 0", stageFile, -1, "", "not 0 to 100"},
		{"above 100", stageFile, 101, "", "not 0 to 100"},
		{"a file Parse refuses", stageFile + "stagingPercentage: 150\n", 10, "", "not an integer from 0 to 100"},
		{"no file", "", 10, "", "empty"},
		{"an explicit first key", "? version\n: 1.4.0\n" + stageFile[len("version: 1.4.0\n"):], 10, "", "does not start its line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := electron.Stage([]byte(tc.body), tc.percent)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			must(t, err)
			if string(got) != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
			f, err := electron.Parse(got)
			must(t, err)
			if p := f.StagingPercentage; tc.percent == 100 && p != nil || tc.percent < 100 && (p == nil || *p != tc.percent) {
				t.Errorf("Parse reads stagingPercentage %v, want %d", p, tc.percent)
			}
		})
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// stagingCheck is electron-updater's own reading of channel files (js-yaml
// through parseUpdateInfo) and its own staging check (AppUpdater's
// isStagingMatch, called on a stand-in updater whose installs have the
// given staging ids), in plain Node. stdin: {"files": [base64, …], "ids":
// [uuid, …]}; stdout: per file, {"staging": its stagingPercentage or
// null, "match": [whether each id gets the update]}.
const stagingCheck = `
const { AppUpdater } = require("electron-updater/out/AppUpdater")
const { parseUpdateInfo } = require("electron-updater/out/providers/Provider")
let input = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", c => (input += c))
process.stdin.on("end", async () => {
  const { files, ids } = JSON.parse(input)
  const logger = { info() {}, warn() {} }
  const answers = []
  for (const file of files) {
    const info = parseUpdateInfo(Buffer.from(file, "base64").toString("utf8"), "latest.yml", new URL("https://updates.test/"))
    const match = []
    for (const id of ids) {
      const updater = { _logger: logger, stagingUserIdPromise: { value: Promise.resolve(id) } }
      match.push(await AppUpdater.prototype.isStagingMatch.call(updater, info))
    }
    answers.push({ staging: info.stagingPercentage ?? null, match })
  }
  process.stdout.write(JSON.stringify(answers))
})
`

// TestStageClient reads staged files with electron-updater's own YAML
// parsing and staging check: at P % an install gets the update exactly
// when the last 32 bits of its staging id, as a share of 2^32 − 1, are
// below P/100; at 100 % every install, even the one a written 100 would
// leave out.
func TestStageClient(t *testing.T) {
	testkit.Integration(t)
	dir := testkit.NodeTool(t, "electron-updater", "electron-updater")

	// Ids whose last 32 bits spread over the range, with both ends and the
	// edges of 10 %.
	vals := []uint32{0, 1, 0x19999999, 0x1999999a, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff}
	for i := range 1000 {
		vals = append(vals, uint32(uint64(i)*0xffffffff/999))
	}
	ids := make([]string, len(vals))
	for i, v := range vals {
		ids[i] = fmt.Sprintf("3e0e1d5a-9b7c-4c1e-8f00-1234%08x", v)
	}

	percents := []int{0, 10, 50, 100}
	var files [][]byte
	for _, p := range percents {
		staged, err := electron.Stage([]byte(stageHead+"stagingPercentage: 30\n"+stageTail), p)
		must(t, err)
		files = append(files, staged)
	}
	// The publisher's own 100, for the install it leaves out.
	files = append(files, []byte(stageFile+"stagingPercentage: 100\n"))

	var answers []struct {
		Staging *int
		Match   []bool
	}
	testkit.NodeJSON(t, dir, map[string]any{"files": files, "ids": ids}, &answers, "-e", stagingCheck)
	if len(answers) != len(files) {
		t.Fatalf("node: %d answers for %d files", len(answers), len(files))
	}

	for i, p := range percents {
		a := answers[i]
		if p == 100 && a.Staging != nil || p < 100 && (a.Staging == nil || *a.Staging != p) {
			t.Errorf("%d %%: electron-updater reads stagingPercentage %v", p, a.Staging)
		}
		in := 0
		for j, v := range vals {
			want := p == 100 || float64(v)/0xffffffff < float64(p)/100
			if a.Match[j] != want {
				t.Errorf("%d %%: id %s gets the update: %v, want %v", p, ids[j], a.Match[j], want)
			}
			if a.Match[j] {
				in++
			}
		}
		t.Logf("%d %%: %d of %d installs get the update", p, in, len(vals))
	}
	if last := answers[len(percents)].Match; last[7] {
		t.Errorf("a written 100: id %s gets the update; the test's premise is wrong", ids[7])
	}
}

// FuzzStage feeds Stage any text and percentage: it never panics, and of a
// file Parse accepts, at 0 to 100, what it stages Parse reads as the same
// file with that percentage, or it says why it could not write the key.
func FuzzStage(f *testing.F) {
	for _, tc := range valid {
		f.Add(fill(tc.body), 10)
	}
	f.Add(stageFile, 10)
	f.Add(stageHead+"stagingPercentage: 50\n"+stageTail, 100)
	f.Add(stageFile+"stagingPercentage:", 0)
	f.Add(stageFlow, 10)
	f.Add(indent(stageFile), 100)
	f.Add(strings.ReplaceAll(stageFile, "\n", "\r\n"), 7)
	f.Fuzz(func(t *testing.T, body string, percent int) {
		got, err := electron.Stage([]byte(body), percent)
		before, parseErr := electron.Parse([]byte(body))
		if err != nil {
			layout := strings.Contains(err.Error(), "does not start its line") || strings.Contains(err.Error(), "no brace") || strings.Contains(err.Error(), "cannot be replaced")
			if parseErr == nil && percent >= 0 && percent <= 100 && !layout {
				t.Fatalf("Stage of a file Parse accepts: %v", err)
			}
			return
		}
		if parseErr != nil {
			if len(body) <= electron.MaxFile {
				t.Fatalf("Stage of a file Parse refuses (%v): no error", parseErr)
			}
			return
		}
		after, err := electron.Parse(got)
		if err != nil {
			if len(got) > electron.MaxFile {
				return
			}
			t.Fatalf("Parse of what Stage wrote: %v\n%q", err, got)
		}
		if p := after.StagingPercentage; percent == 100 && p != nil || percent < 100 && (p == nil || *p != percent) {
			t.Fatalf("stagingPercentage %v, want %d", p, percent)
		}
		after.StagingPercentage = before.StagingPercentage
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("Parse of what Stage wrote:\ngot  %+v\nwant %+v", after, before)
		}
	})
}
