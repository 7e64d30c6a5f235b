package program

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// The source cache: a program built once on a host is kept, source and
// build output together, under the login user's ~/.cache/rlab/programs/<key>
// (beside the agent's own ~/.cache/rlab/agent), keyed by the source's
// content hash, the build argv and the host's platform, so the next run with
// the same source skips the upload and the build. It is kept by two fixed
// scripts (cacheLookup, cacheStore) that run as the login user through the
// agent's proc.start, never as root: whatever they read or write is the
// user's own, within what the user may touch, and a poisoned cache could
// only feed the user's programs to the user. Paths reach them as arguments,
// never in the script's text.

const (
	// CacheEntries bounds the cache: the least recently used entries
	// beyond it are removed after each store.
	CacheEntries = 8
	// CacheEntryMax is the largest build tree kept (a bigger one is built
	// each run).
	CacheEntryMax = 64 << 20
	// cacheScriptTime bounds one lookup or store.
	cacheScriptTime = 2 * time.Minute
)

// cacheLookup copies a cached build ($1/$2, complete when it holds done)
// into the work dir's $3 and prints "hit"; else, or when the copy fails
// (pruned meanwhile), it removes what it copied and prints "miss". It marks
// the entry used (its mtime orders the pruning).
const cacheLookup = `set -u
c="$1/$2"
if [ -f "$c/done" ] && [ -d "$c/tree" ] && [ ! -L "$c" ] && [ ! -L "$c/tree" ]; then
	if mkdir -p "$3" && cp -RPp "$c/tree/." "$3/"; then
		touch "$c" 2>/dev/null
		echo hit
		exit 0
	fi
	rm -rf "$3"
fi
echo miss
`

// cacheStore copies the work dir's built $3 into the cache as entry $2
// (through a temporary folder renamed into place, so a reader never sees
// half of one), unless it is larger than $4 KiB or there already; then
// removes entries beyond the $5 most recently used, and temporaries an
// interrupted store left an hour ago.
const cacheStore = `set -eu
umask 077
mkdir -p "$1"
find "$1" -mindepth 1 -maxdepth 1 -name '.tmp.*' -mmin +60 -exec rm -rf {} +
if [ -f "$1/$2/done" ]; then echo present; exit 0; fi
kb=$(du -sk "$3" | cut -f1)
if [ "$kb" -gt "$4" ]; then echo "not kept: $kb KiB, more than $4"; exit 0; fi
t=$(mktemp -d "$1/.tmp.XXXXXX")
cp -RPp "$3" "$t/tree"
touch "$t/done"
if [ -e "$1/$2" ]; then rm -rf "$t"; echo present; exit 0; fi
mv "$t" "$1/$2"
echo stored
ls -1t "$1" | tail -n +$(($5 + 1)) | while read -r e; do rm -rf "$1/$e"; done
`

// CacheRoot is the cache folder on a host whose agent works in workDir
// (<home>/.cache/rlab/runs/<run>/<host>, the default): <home>/.cache/rlab/
// programs. "" for a work dir of another shape (no cache there).
func CacheRoot(workDir string) string {
	i := strings.LastIndex(workDir, "/.cache/rlab/runs/")
	if i <= 0 || !path.IsAbs(workDir) || path.Clean(workDir) != workDir {
		return ""
	}
	return workDir[:i] + "/.cache/rlab/programs"
}

// CacheKey names a program's build on a platform: the source's content
// hash, the build argv, and what the build depends on of the host (the
// machine, the distribution and its release, the compiler's and
// rdma-core's versions).
func CacheKey(p *kinds.Source, platform []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "source %s\n", p.Hash)
	for _, a := range p.Build {
		fmt.Fprintf(h, "build %q\n", a)
	}
	for _, x := range platform {
		fmt.Fprintf(h, "platform %q\n", x)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// cacheFor is the cache folder and key of program p on host, from the
// host's facts; ok false when the host's facts are unknown or its work
// dir is not of the default shape.
func cacheFor(env *steps.Env, host string, p *kinds.Source) (root, key string, ok bool) {
	f := env.Facts[host]
	if f == nil {
		return "", "", false
	}
	root = CacheRoot(f.WorkDir)
	if root == "" {
		return "", "", false
	}
	return root, CacheKey(p, []string{f.Arch, f.Platform.DistroID, f.Platform.DistroVersion, f.Tools[Compiler.Name].Version, f.Platform.RDMACore}), true
}

// runCacheScript runs one of the cache scripts on host as the login user
// and returns the last line it printed.
func runCacheScript(ctx context.Context, env *steps.Env, host, handle, script string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cacheScriptTime)
	defer cancel()
	var procs steps.Procs
	spec := steps.ProcSpec{Host: host, Handle: handle, Argv: append([]string{"sh", "-c", script, "rlab-program-cache"}, args...), Role: "cache"}
	if _, err := steps.StartProc(ctx, env, &procs, "program cache", spec); err != nil {
		return "", err
	}
	r, err := steps.WaitProc(ctx, env, &procs, host, handle, steps.Remaining(ctx))
	if err != nil {
		uctx, c := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		procs.StopAll(uctx, env)
		c()
		return "", err
	}
	out := strings.TrimSpace(r.Stdout)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if r.ExitCode != 0 || r.Signal != "" || r.TimedOut {
		// The last lines of its stderr: the host's, kept in the error
		// (SECURITY 139).
		st := strings.TrimSpace(r.Stderr)
		if len(st) > 2000 {
			st = "…" + strings.ToValidUTF8(st[len(st)-2000:], "")
		}
		return cutLine(out), fmt.Errorf("exit %d%s: %s", r.ExitCode, r.Signal, st)
	}
	return out, nil
}

// fromCache copies p's cached build into dir on host; true on a hit.
func fromCache(ctx context.Context, env *steps.Env, host string, p *kinds.Source, dir string) bool {
	root, key, ok := cacheFor(env, host, p)
	if !ok {
		return false
	}
	out, err := runCacheScript(ctx, env, host, cacheHandle(p, "lookup"), cacheLookup, root, key, dir)
	if err != nil || out != "hit" {
		return false
	}
	env.Log.Info("program from the host's cache: no upload, no build", "host", host, "program", p.Name, "cache", path.Join(root, key))
	return true
}

// toCache keeps p's build in dir in the host's cache; a failure is logged,
// never the run's: the next run builds again.
func toCache(ctx context.Context, env *steps.Env, host string, p *kinds.Source, dir string) {
	root, key, ok := cacheFor(env, host, p)
	if !ok {
		return
	}
	out, err := runCacheScript(ctx, env, host, cacheHandle(p, "store"), cacheStore, root, key, dir,
		strconv.Itoa(CacheEntryMax>>10), strconv.Itoa(CacheEntries))
	if err != nil {
		env.Log.Warn("program build not kept in the host's cache", "host", host, "program", p.Name, "err", err)
		return
	}
	env.Log.Info("program build and the host's cache", "host", host, "program", p.Name, "cache", path.Join(root, key), "result", out)
}

func cacheHandle(p *kinds.Source, what string) string {
	return "prog." + safe(p.Name) + "." + p.Hash[:12] + ".cache-" + what
}
