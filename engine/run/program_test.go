package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/program"
)

// programLab writes src as a lab beside a copy of the test programs
// (testdata/labs/valid/pingpair: a TCP server and client in C) and a
// source that does not compile, and loads it.
func programLab(t testing.TB, src string) *lab.Lab {
	t.Helper()
	return programLabWith(t, src, nil)
}

// programLabWith is programLab with extra (or changed) files in the
// pingpair source, by path under it.
func programLabWith(t testing.TB, src string, files map[string]string) *lab.Lab {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc on this machine")
	}
	dir := t.TempDir()
	from := filepath.Join("..", "..", "testdata", "labs", "valid", "pingpair")
	if err := os.CopyFS(filepath.Join(dir, "pingpair"), os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	for rel, body := range files {
		if err := os.WriteFile(filepath.Join(dir, "pingpair", rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken", "broken.c"), []byte("int main(void) {\n\treturn undeclared_thing;\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "lab.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{p}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatalf("load lab: %v", diags)
	}
	return l
}

const programHosts = twoHosts + `
program "pingpair" {
  source = "pingpair"
  build  = ["make", "server", "client"]
}
program "broken" {
  source = "broken"
  build  = ["gcc", "-o", "broken", "broken.c"]
}
`

// TestRunProgram: a program block is shipped to both hosts and built
// there once (make), then run as a pair: ready by a regex on the server's
// output, and by its port listening, with a server that never exits by
// itself interrupted after its client without failing; metric blocks give
// a count and a value in their unit, expect reads them; the build's output
// is in the run's logs and nothing stays in the hosts' work dirs. The
// failing cases each fail the workload (exit 1) saying what: a build that
// does not compile (host, command, exit code, the compiler's error line),
// a server never ready, a client that exits 1, a pattern that never
// matched.
func TestRunProgram(t *testing.T) {
	t.Run("pair, ready by regex and by port, metrics", func(t *testing.T) {
		l := programLab(t, programHosts+`
workload "by_regex" {
  tool           = "program"
  program        = program.pingpair
  server         = host.a
  client         = host.b
  server_command = ["./server", "${self.port}", "-x"]
  client_command = ["./client", self.server_address, "${self.port}"]
  ready          = "^listening on [0-9]+"
  repeat         = 2
  metric "pongs" { pattern = "^got pong ping" }
  metric "served" {
    pattern = "^served (?P<value>[0-9]+) bytes"
    unit    = "bytes"
    from    = "server"
  }
  metric "mibps" {
    pattern = "in [0-9.]+ s \\((?P<value>[0-9.]+) MiB/s\\)"
    unit    = "MiB/s"
    better  = "higher"
  }
  expect { condition = result.pongs == 1 && result.mibps >= 0 }
}
workload "by_port" {
  tool           = "program"
  program        = program.pingpair
  server         = host.a
  client         = host.b
  server_command = ["./server", "${self.port}", "-forever"]
  client_command = ["./client", self.server_address, "${self.port}"]
  metric "pongs" { pattern = "^got pong" }
}
workload "alone" {
  tool    = "program"
  program = program.pingpair
  host    = host.a
  command = ["ls", "server", "client", "Makefile"]
  metric "files" { pattern = "^(server|client|Makefile)$" }
}
workload "sized" {
  tool       = "program"
  program    = program.pingpair
  host       = host.b
  sizes      = ["4KiB", "8KiB"]
  iterations = 3
  command    = ["echo", "size", "${self.size}", "x", "${self.iterations}", "port", "${self.port}"]
  metric "echoed" { pattern = "^size (?P<value>[0-9]+) x 3 port `+fmt.Sprint((kinds.BasePort+3*kinds.PortsPerWorkload)/10)+`[0-9]$" }
}
workload "uptime" {
  tool    = "exec"
  host    = host.a
  command = ["cat", "/proc/uptime"]
  metric "up" {
    pattern = "^(?P<value>[0-9.]+) "
    unit    = "s"
  }
  expect { condition = result.up > 0 }
}
`)
		bed := newPipeBed(t)
		res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: bed, NoReport: true, Out: filepath.Join(t.TempDir(), "run")})
		if res.Code != ExitOK {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
		r := readRun(t, res.Dir)
		got := map[string][]results.Sample{}
		for _, s := range r.Samples {
			got[s.Meta.Workload+"."+s.Metric] = append(got[s.Meta.Workload+"."+s.Metric], s)
		}
		for key, want := range map[string]struct {
			n    int
			unit string
		}{"by_regex.pongs": {2, "lines"}, "by_regex.served": {2, "bytes"}, "by_regex.mibps": {2, "MiB/s"}, "by_port.pongs": {1, "lines"}, "alone.files": {1, "lines"}, "sized.echoed": {2, ""}, "uptime.up": {1, "s"}} {
			ss := got[key]
			if len(ss) != want.n {
				t.Errorf("%s: %d samples, want %d", key, len(ss), want.n)
				continue
			}
			for _, s := range ss {
				if s.Unit != want.unit || s.Value < 0 || (want.unit == "lines" && s.Value == 0) { // a tiny exchange may print 0.000 MiB/s
					t.Errorf("%s: %+v", key, s)
				}
			}
		}
		// The metric blocks head the result, in the order declared, in
		// results.json, summary.md and the table rlab run ends with.
		heads := map[string]string{}
		byWL := map[string][]results.Agg{}
		for _, a := range results.Aggregate(results.Measures(r.Samples)) {
			byWL[a.Workload] = append(byWL[a.Workload], a)
		}
		for _, w := range r.Workloads {
			heads[w.Name] = results.KeyNumbers(w, byWL[w.Name])
			if w.Name == "by_regex" && strings.Join(w.Metrics, ",") != "pongs,served,mibps" {
				t.Errorf("by_regex declared metrics %q, want pongs,served,mibps", w.Metrics)
			}
		}
		summary, err := os.ReadFile(filepath.Join(res.Dir, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		var table strings.Builder
		if err := results.WriteHeadline(&table, r); err != nil {
			t.Fatal(err)
		}
		for wl, prefix := range map[string]string{"by_regex": "pongs 1; served ", "by_port": "pongs 1", "alone": "files 3", "sized": "echoed 8192 at 8 KiB", "uptime": "up "} {
			h := heads[wl]
			if !strings.HasPrefix(h, prefix) || strings.Contains(h, "exit ") {
				t.Errorf("%s headline %q, want it to start with %q (its metric blocks, not exit code and time)", wl, h, prefix)
			}
			if !strings.Contains(string(summary), h) || !strings.Contains(table.String(), h) {
				t.Errorf("%s headline %q not in summary.md or the run's table:\n%s\n%s", wl, h, summary, table.String())
			}
		}
		if h := heads["by_regex"]; !strings.Contains(h, "; mibps ") || !strings.HasSuffix(h, "MiB/s (median of 2)") {
			t.Errorf("by_regex headline %q: want its mibps third, in MiB/s, median of 2", h)
		}
		if s := got["by_regex.mibps"]; len(s) > 0 && s[0].Meta.Extra["better"] != "higher" {
			t.Errorf("mibps meta %+v", s[0].Meta)
		}
		if s := got["alone.files"]; len(s) == 1 && s[0].Value != 3 {
			t.Errorf("alone.files = %v, want 3", s[0].Value)
		}
		// One run per size, self.size and self.iterations filled.
		for _, s := range got["sized.echoed"] {
			if s.Value != float64(s.Meta.Size) || s.Meta.Iterations != 3 {
				t.Errorf("sized: %v at size %d (iterations %d)", s.Value, s.Meta.Size, s.Meta.Iterations)
			}
		}
		// The interrupted server said so, and that was no failure.
		outs, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "a", "logs", "wl.by_port.server.r0.stdout"))
		if len(outs) != 1 {
			t.Fatalf("server output of by_port: %v", outs)
		}
		if b, _ := os.ReadFile(outs[0]); !strings.Contains(string(b), "interrupted") {
			t.Errorf("by_port server output %q: not interrupted", b)
		}
		// Built once per host, its output kept in the run's logs.
		for _, h := range []string{"a", "b"} {
			builds, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", h, "logs", "prog.pingpair.*.build.stdout"))
			if len(builds) != 1 {
				t.Errorf("host %s: build logs %v, want one", h, builds)
			} else if b, _ := os.ReadFile(builds[0]); !strings.Contains(string(b), "gcc") {
				t.Errorf("host %s: build log %q", h, b)
			}
		}
		if srcs, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "a", "logs", "programs", "pingpair-*", "server.c")); len(srcs) != 1 {
			t.Errorf("the shipped source in the run's logs: %v, want one server.c", srcs)
		}
		assertNothingLeft(t, bed)
	})

	for _, tc := range []struct {
		name, workload string
		want           []string
	}{
		{"build fails", `
workload "w" {
  tool    = "program"
  program = program.broken
  host    = host.b
  command = ["./broken"]
}`, []string{`build program "broken" on host "b": gcc -o broken broken.c: exit 1:`, "broken.c:2:", "error:", "undeclared_thing", "logs/prog.broken."}},
		{"server never ready", `
workload "w" {
  tool           = "program"
  program        = program.pingpair
  server         = host.a
  client         = host.b
  server_command = ["./server", "${self.port}", "-forever"]
  client_command = ["./client", self.server_address, "${self.port}"]
  ready          = "a line the server never prints"
  timeout        = "3s"
}`, []string{`start program server on host "a": ./server`, `ready: its output matching "a line the server never prints")`, "it printed:\nlistening on " + fmt.Sprint(kinds.BasePort)}},
		{"client exits 1", `
workload "w" {
  tool           = "program"
  program        = program.pingpair
  server         = host.a
  client         = host.b
  server_command = ["./server", "${self.port}", "-forever"]
  client_command = ["./client", self.server_address, "${self.port}", "-fail"]
}`, []string{`program client on host "b": ./client 127.0.0.1`, "exit 1", "client: failing as asked"}},
		{"pattern never matches", `
workload "w" {
  tool           = "program"
  program        = program.pingpair
  server         = host.a
  client         = host.b
  server_command = ["./server", "${self.port}", "-x"]
  client_command = ["./client", self.server_address, "${self.port}"]
  metric "writes" { pattern = "RDMA_WRITE complete" }
}`, []string{`metric "writes": pattern "RDMA_WRITE complete" matched no line of the output`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bed := newPipeBed(t)
			res := runPlanned(context.Background(), t, programLab(t, programHosts+tc.workload), plan.Options{}, Options{Connector: bed, NoReport: true, Out: filepath.Join(t.TempDir(), "run")})
			if res.Code != ExitFailed || res.Err == nil {
				t.Fatalf("code %d (want %d): %v", res.Code, ExitFailed, res.Err)
			}
			t.Logf("%s: %v", tc.name, res.Err)
			for _, w := range tc.want {
				if !strings.Contains(res.Err.Error(), w) {
					t.Errorf("error %q\nlacks %q", res.Err, w)
				}
			}
			assertNothingLeft(t, bed)
		})
	}
}

// assertNothingLeft: no process of the run is left. (The in-process
// hosts' work dirs are not of the shape a run removes; the netns test,
// TestNetnsProgram, sees the real one go.)
func assertNothingLeft(t *testing.T, bed *pipeBed) {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", "/server [0-9]+ -forever").CombinedOutput()
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("a server is left running: pids %s", s)
	}
}

// TestNetnsProgram is TestRunProgram's pair against real OpenSSH and the
// real agent (root, working for the login user: become): the source goes
// over the agent's files.write, is built with the hosts' gcc as the login
// user, runs as a pair ready by its port and by a regex, gives its metric;
// a build that fails names host, command, exit code and the compiler's
// error; and after each run the hosts' work dirs, where the program was
// shipped and built, are gone.
func TestNetnsProgram(t *testing.T) {
	bed, hosts := netnsBed(t, 2)
	base := "lab \"prog\" {}\n" + hosts + `
program "pingpair" {
  source = "pingpair"
  build  = ["make", "server", "client"]
}
program "broken" {
  source = "broken"
  build  = ["gcc", "-o", "broken", "broken.c"]
}
`
	workDirsGone := func(t *testing.T, res *Result) {
		t.Helper()
		facts, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "*", "facts.json"))
		if len(facts) == 0 {
			t.Fatalf("no facts.json in %s", res.Dir)
		}
		for _, f := range facts {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var fs struct {
				WorkDir string `json:"work_dir"`
			}
			if err := json.Unmarshal(b, &fs); err != nil || !strings.HasPrefix(fs.WorkDir, bed.Home+"/.cache/rlab/runs/") {
				t.Fatalf("%s: work dir %q (%v)", f, fs.WorkDir, err)
			}
			if ents, err := os.ReadDir(fs.WorkDir); !os.IsNotExist(err) {
				t.Errorf("work dir %s left (%v): %v", fs.WorkDir, err, ents)
			}
		}
		out, _ := exec.Command("pgrep", "-f", "/server [0-9]+ -forever").CombinedOutput()
		if s := strings.TrimSpace(string(out)); s != "" {
			t.Errorf("a server is left running: pids %s", s)
		}
	}
	t.Run("pair", func(t *testing.T) {
		// A nonce: built here, not taken from an earlier run's cache
		// (TestNetnsProgramCache).
		l := programLabWith(t, base+`
workload "by_port" {
  tool           = "program"
  program        = program.pingpair
  server         = host.h0
  client         = host.h1
  server_command = ["./server", "${self.port}", "-forever"]
  client_command = ["./client", self.server_address, "${self.port}"]
  metric "pongs" { pattern = "^got pong ping" }
  expect { condition = result.pongs == 1 }
}
workload "by_regex" {
  tool           = "program"
  program        = program.pingpair
  server         = host.h1
  client         = host.h0
  server_command = ["./server", "${self.port}"]
  client_command = ["./client", self.server_address, "${self.port}"]
  ready          = "^listening on"
  metric "mibps" {
    pattern = "\\((?P<value>[0-9.]+) MiB/s\\)"
    unit    = "MiB/s"
  }
}
`, map[string]string{"nonce.txt": fmt.Sprintf("%d-%d\n", os.Getpid(), time.Now().UnixNano())})
		res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), NoReport: true, Out: filepath.Join(t.TempDir(), "run")})
		if res.Code != ExitOK {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
		r := readRun(t, res.Dir)
		n := map[string]int{}
		for _, s := range r.Samples {
			if s.Metric == "pongs" && s.Value == 1 && s.Unit == "lines" || s.Metric == "mibps" && s.Unit == "MiB/s" {
				n[s.Metric]++
			}
		}
		if n["pongs"] != 1 || n["mibps"] != 1 {
			t.Errorf("samples %v, want a pongs and a mibps", n)
		}
		workDirsGone(t, res)
	})
	t.Run("build fails", func(t *testing.T) {
		l := programLab(t, base+`
workload "w" {
  tool    = "program"
  program = program.broken
  host    = host.h1
  command = ["./broken"]
}
`)
		res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), NoReport: true, Out: filepath.Join(t.TempDir(), "run")})
		if res.Code != ExitFailed || res.Err == nil {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
		for _, w := range []string{`build program "broken" on host "h1": gcc -o broken broken.c: exit 1:`, "error:", "undeclared_thing"} {
			if !strings.Contains(res.Err.Error(), w) {
				t.Errorf("error %q lacks %q", res.Err, w)
			}
		}
		workDirsGone(t, res)
	})
	t.Run("build never ends", func(t *testing.T) {
		// The build's bound reaches the root agent, which ends the login
		// user's build (SECURITY 81); before, the run waited for it.
		old := program.BuildTimeout
		program.BuildTimeout = 3 * time.Second
		t.Cleanup(func() { program.BuildTimeout = old })
		l := programLab(t, base+`
program "forever" {
  source = "broken"
  build  = ["sleep", "3601"]
}
workload "w" {
  tool    = "program"
  program = program.forever
  host    = host.h1
  command = ["true"]
  timeout = "2s"
}
`)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res := runPlanned(ctx, t, l, plan.Options{}, Options{Connector: sshConnector(t), NoReport: true, Out: filepath.Join(t.TempDir(), "run")})
		if ctx.Err() != nil {
			t.Fatal("the run did not end by itself within two minutes")
		}
		if res.Code != ExitFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "the most a build may take") {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
		if out, _ := exec.Command("pgrep", "-f", "^sleep 3601$").CombinedOutput(); strings.TrimSpace(string(out)) != "" {
			t.Errorf("the build is left running: pids %s", out)
		}
		workDirsGone(t, res)
	})
}

// TestNetnsProgramCache: the source cache across runs, on netns hosts
// (real OpenSSH, the real agent as root for the login user, whose home the
// hosts share as over NFS). The first run of a source uploads and builds
// it and keeps the build in ~/.cache/rlab/programs/<key>, owned by the
// login user, 0700; a second run of the same source (another lab folder,
// the same bytes) copies it from there, with no upload and no build, says
// so in the log, and runs it; a changed file is a new key, built again.
// The source carries a nonce so no other run's cache answers for it.
func TestNetnsProgramCache(t *testing.T) {
	bed, hosts := netnsBed(t, 2)
	nonce := fmt.Sprintf("%d-%d\n", os.Getpid(), time.Now().UnixNano())
	src := "lab \"progcache\" {}\n" + hosts + `
program "pingpair" {
  source = "pingpair"
  build  = ["make", "server", "client"]
}
workload "alone" {
  tool    = "program"
  program = program.pingpair
  host    = host.h0
  command = ["ls", "server", "client"]
  metric "files" { pattern = "^(server|client)$" }
}
`
	cacheRoot := filepath.Join(bed.Home, ".cache", "rlab", "programs")
	run := func(t *testing.T, files map[string]string) (*Result, string) {
		t.Helper()
		var log bytes.Buffer
		res := runPlanned(context.Background(), t, programLabWith(t, src, files), plan.Options{}, Options{Connector: sshConnector(t), NoReport: true, Out: filepath.Join(t.TempDir(), "run"),
			Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		if res.Code != ExitOK {
			t.Fatalf("code %d: %v\n%s", res.Code, res.Err, log.String())
		}
		r := readRun(t, res.Dir)
		if n := len(r.Samples); n == 0 {
			t.Fatal("no samples")
		}
		for _, s := range r.Samples {
			if s.Metric == "files" && s.Value != 2 {
				t.Errorf("files = %v, want 2 (server and client built)", s.Value)
			}
		}
		return res, log.String()
	}
	builds := func(res *Result) []string {
		b, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "h0", "logs", "prog.pingpair.*.build.stdout"))
		return b
	}
	entries := func() map[string]bool {
		ents, _ := os.ReadDir(cacheRoot)
		out := map[string]bool{}
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") {
				out[e.Name()] = true
			}
		}
		return out
	}
	before := entries()
	first, _ := run(t, map[string]string{"nonce.txt": nonce})
	if len(builds(first)) != 1 {
		t.Fatalf("first run: build logs %v, want one (nothing cached yet)", builds(first))
	}
	var key string
	for e := range entries() {
		if !before[e] {
			key = e
		}
	}
	if key == "" {
		t.Fatalf("first run kept nothing in %s", cacheRoot)
	}
	fi, err := os.Stat(cacheRoot)
	if err != nil {
		t.Fatal(err)
	}
	u, err := user.Lookup(bed.User)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{cacheRoot, filepath.Join(cacheRoot, key), filepath.Join(cacheRoot, key, "tree", "server")} {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if uid := strconv.Itoa(int(st.Sys().(*syscall.Stat_t).Uid)); uid != u.Uid {
			t.Errorf("%s belongs to uid %s, not the login user's %s", p, uid, u.Uid)
		}
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("%s mode %v, want 0700", cacheRoot, fi.Mode().Perm())
	}

	second, log := run(t, map[string]string{"nonce.txt": nonce})
	if b := builds(second); len(b) != 0 {
		t.Errorf("second run of the same source built again: %v", b)
	}
	if !strings.Contains(log, "no upload, no build") || !strings.Contains(log, key) {
		t.Errorf("second run's log does not say the program came from the cache (%s):\n%s", key, log)
	}
	if srcs, _ := filepath.Glob(filepath.Join(second.Dir, "hosts", "h0", "logs", "programs", "pingpair-*", "server.c")); len(srcs) != 1 {
		t.Errorf("the cached source in the second run's logs: %v, want one server.c", srcs)
	}

	changed, _ := run(t, map[string]string{"nonce.txt": nonce + "changed\n"})
	if len(builds(changed)) != 1 {
		t.Errorf("a changed source was not built again: build logs %v", builds(changed))
	}
}

// TestProgramBuildBounded: a program's build has an end of its own
// (program.BuildTimeout): the workload's timeout bounds its units, not the
// build before them, and a build that never ends held rlab run for good
// (issue 24, attack round: a lab's build of `sleep`, or a host that never
// answers the build's wait). The run fails naming the build and the bound,
// and no build process is left.
func TestProgramBuildBounded(t *testing.T) {
	old := program.BuildTimeout
	program.BuildTimeout = 2 * time.Second
	t.Cleanup(func() { program.BuildTimeout = old })
	l := programLab(t, twoHosts+`
program "forever" {
  source = "broken"
  build  = ["sleep", "3600"]
}
workload "w" {
  tool    = "program"
  program = program.forever
  host    = host.a
  command = ["true"]
  timeout = "2s"
}
`)
	bed := newPipeBed(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	res := runPlanned(ctx, t, l, plan.Options{}, Options{Connector: bed, NoReport: true, Out: filepath.Join(t.TempDir(), "run")})
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("the run did not end by itself within a minute (a build of sleep 3600, the bound %s)", program.BuildTimeout)
	}
	if res.Code != ExitFailed || res.Err == nil {
		t.Fatalf("code %d (want %d): %v", res.Code, ExitFailed, res.Err)
	}
	for _, w := range []string{`build program "forever" on host "a": sleep 3600`, "the most a build may take"} {
		if !strings.Contains(res.Err.Error(), w) {
			t.Errorf("error %q\nlacks %q", res.Err, w)
		}
	}
	if took > 30*time.Second {
		t.Errorf("the run took %s with a build bound of %s", took, program.BuildTimeout)
	}
	if out, _ := exec.Command("pgrep", "-x", "-f", "sleep 3600").CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("the build is left running: pids %s", out)
	}
}
