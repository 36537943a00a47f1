package check

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// Instruction is one instruction of a Dockerfile, continuation lines joined.
type Instruction struct {
	Line int    // where it starts, from 1
	Cmd  string // upper case: FROM, RUN, COPY, …
	Args string
}

// Stage is the instructions from one FROM to the next, FROM included.
type Stage []Instruction

// ParseDockerfile splits a Dockerfile into its stages. It understands what
// deploy/Dockerfile uses: comments, blank lines and backslash continuations
// (the default escape character); heredocs are not supported.
func ParseDockerfile(text string) ([]Stage, error) {
	var stages []Stage
	var cur strings.Builder
	start := 0
	flush := func() error {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return nil
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := Instruction{Line: start, Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)}
		switch {
		case in.Cmd == "FROM":
			stages = append(stages, Stage{in})
		case len(stages) == 0 && in.Cmd != "ARG":
			return fmt.Errorf("dockerfile line %d: %s before the first FROM", in.Line, in.Cmd)
		case len(stages) > 0:
			stages[len(stages)-1] = append(stages[len(stages)-1], in)
		}
		return nil
	}
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if body, more := strings.CutSuffix(trimmed, `\`); more {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("dockerfile line %d: continues past the end", start)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(stages) == 0 {
		return nil, errors.New("dockerfile: no FROM")
	}
	return stages, nil
}

// GoBuild is the `go build` of a Dockerfile.
type GoBuild struct {
	Env  []string // the NAME=value settings before it in the same RUN, and the stage's ENV
	Args []string // what follows "go build", split as the shell would
}

// Dockerfile checks the image deploy/Dockerfile describes: a build
// stage that runs one `go build` of ./cmd/api and ./cmd/poller with
// CGO_ENABLED=0, -trimpath and -ldflags "-s -w -X main.version=${VERSION}";
// a last stage on scratch or a distroless static image that copies both
// binaries to /usr/local/bin and runs as a numeric non-root user. It returns
// that go build for a test to run, and every problem it found.
func Dockerfile(stages []Stage) (GoBuild, []string) {
	var problems []string
	var build GoBuild
	found := false
	for _, st := range stages[:len(stages)-1] {
		var env []string
		for _, in := range st {
			switch in.Cmd {
			case "ENV":
				env = append(env, strings.Fields(in.Args)...)
			case "RUN":
				words := shellWords(in.Args)
				i := slices.Index(words, "go")
				if i < 0 || i+1 >= len(words) || words[i+1] != "build" {
					continue
				}
				if found {
					problems = append(problems, fmt.Sprintf("dockerfile line %d: a second go build", in.Line))
				}
				found = true
				build.Env = env
				for _, w := range words[:i] {
					if strings.Contains(w, "=") && !strings.HasPrefix(w, "--") {
						build.Env = append(build.Env, w)
					}
				}
				build.Args = words[i+2:]
			}
		}
	}
	if !found {
		return build, append(problems, "dockerfile: no build stage runs go build")
	}
	if !slices.Contains(build.Env, "CGO_ENABLED=0") {
		problems = append(problems, "dockerfile: go build without CGO_ENABLED=0: the binaries would not be static")
	}
	for _, want := range []string{"-trimpath", "./cmd/api", "./cmd/poller"} {
		if !slices.Contains(build.Args, want) {
			problems = append(problems, fmt.Sprintf("dockerfile: go build without %s", want))
		}
	}
	if i := slices.Index(build.Args, "-ldflags"); i < 0 || i+1 >= len(build.Args) || build.Args[i+1] != "-s -w -X main.version=${VERSION}" {
		problems = append(problems, `dockerfile: go build without -ldflags "-s -w -X main.version=${VERSION}"`)
	}

	last := stages[len(stages)-1]
	base := strings.Fields(last[0].Args)
	if image := base[len(base)-1]; image != "scratch" && !strings.Contains(image, "distroless/static") {
		problems = append(problems, fmt.Sprintf("dockerfile: the image is based on %s, not scratch or a distroless static image", image))
	}
	var user string
	copied := false
	for _, in := range last {
		switch in.Cmd {
		case "USER":
			user = in.Args
		case "COPY":
			words := strings.Fields(in.Args)
			copied = copied || (slices.ContainsFunc(words, func(w string) bool { return strings.HasSuffix(w, "/api") }) &&
				slices.ContainsFunc(words, func(w string) bool { return strings.HasSuffix(w, "/poller") }) &&
				words[len(words)-1] == "/usr/local/bin/")
		}
	}
	if !copied {
		problems = append(problems, "dockerfile: the last stage does not copy api and poller to /usr/local/bin/")
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		problems = append(problems, fmt.Sprintf("dockerfile: the last stage runs as user %q: want a numeric uid other than 0, which runAsNonRoot can verify", user))
	}
	return build, problems
}

// shellWords splits s into words as a POSIX shell would for the simple
// commands of a Dockerfile: on blanks, with '…' and "…" quoting.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// CopyContext copies the files of root that a `docker build` with that
// context sends, the ones .dockerignore keeps, to dir. It returns the
// relative paths it copied.
func CopyContext(root, dir string) ([]string, error) {
	var patterns []string
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	switch {
	case err == nil:
		patterns, err = ignorefile.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read .dockerignore: %w", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, fmt.Errorf("read .dockerignore: %w", err)
	}
	var copied []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		excluded, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		switch {
		case excluded && d.IsDir() && !pm.Exclusions():
			return filepath.SkipDir
		case excluded:
			return nil
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		copied = append(copied, filepath.ToSlash(rel))
		return copyFile(path, filepath.Join(dir, rel))
	})
	if err != nil {
		return nil, fmt.Errorf("copy the build context: %w", err)
	}
	return copied, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Static reports why the ELF executable at path would not run on scratch:
// it names an interpreter (the dynamic loader) or needs shared libraries.
// It returns nil for a static executable.
func Static(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(p.Open())
			return fmt.Errorf("%s is dynamically linked: its interpreter is %s", path, bytes.TrimRight(interp, "\x00"))
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return err
	}
	if len(libs) > 0 {
		return fmt.Errorf("%s needs the shared libraries %v", path, libs)
	}
	return nil
}
