package program

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// TestDesc: program is one tool that runs on host or between server and
// client, takes sizes and iterations (self.size, self.iterations), and
// needs gcc on its hosts.
func TestDesc(t *testing.T) {
	d := Kind{}.Desc()
	if len(d.Tools) != 1 {
		t.Fatalf("tools %+v", d.Tools)
	}
	tl := d.Tools[0]
	if tl.Name != "program" || !tl.HostOrPair || tl.OneHost || tl.RDMA || !tl.Sizes || !tl.Iterations || tl.Program == nil || tl.Program.Name != "gcc" {
		t.Errorf("tool %+v", tl)
	}
	for _, p := range []string{tl.Program.Packages.Debian, tl.Program.Packages.RHEL, tl.Program.Packages.SUSE} {
		if p != "gcc" {
			t.Errorf("packages %+v", tl.Program.Packages)
		}
	}
}

// TestBuildDir: one folder per source hash and build argv, so two build
// argvs of one source never share what they made.
func TestBuildDir(t *testing.T) {
	p := &kinds.Source{Name: "tut", Hash: strings.Repeat("ab", 32), Build: []string{"make"}}
	q := *p
	q.Build = []string{"make", "server"}
	a, b := BuildDir(p), BuildDir(&q)
	if a == b || !strings.HasPrefix(a, "programs/tut-abababababab-") || BuildDir(p) != a {
		t.Errorf("dirs %q %q", a, b)
	}
}

// TestBuildError: a failed build names the host, the command, how it
// ended, the compiler's first error lines (not its warnings) and where the
// whole output is; without an error line, the output's first lines.
func TestBuildError(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    proto.ProcResult
		want []string
		not  []string
	}{
		{"gcc", proto.ProcResult{Argv: []string{"make"}, ExitCode: 2, StdoutFile: "b.stdout", StderrFile: "b.stderr",
			Stdout: "gcc -O2 -o server server.c\n", Stderr: "server.c:3:1: warning: unused\nserver.c:9:5: error: 'x' undeclared\nmake: *** [Makefile:2: server] Error 1\n"},
			[]string{`build program "tut" on host "a": make: exit 2:`, "server.c:9:5: error: 'x' undeclared", "make: *** [Makefile:2: server] Error 1", "logs/b.stdout and logs/b.stderr"},
			[]string{"warning"}},
		{"no error line", proto.ProcResult{Argv: []string{"./build.sh"}, ExitCode: 1, Stderr: "one\ntwo\nthree\nfour\nfive\nsix\n"},
			[]string{"./build.sh: exit 1:", "one", "five"}, []string{"six"}},
		{"killed", proto.ProcResult{Argv: []string{"make"}, ExitCode: -1, Signal: "SIGKILL"}, []string{"make: killed by SIGKILL"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := BuildError("tut", "a", &tc.r).Error()
			for _, w := range tc.want {
				if !strings.Contains(err, w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(err, w) {
					t.Errorf("%q has %q", err, w)
				}
			}
		})
	}
}

// TestBuildErrorBounded: a build's output is the host's, and its error
// is kept for the run (results.json, the report, the terminal): five
// error lines of a megabyte each made it 5 MB (SECURITY 139). Each line
// it quotes is cut to maxErrorLine bytes, on a rune's start.
func TestBuildErrorBounded(t *testing.T) {
	line := "x.c:1:1: error: " + strings.Repeat("é", 1<<19)
	for _, out := range []string{strings.Repeat(line+"\n", 5), strings.Repeat(strings.Repeat("ü", 1<<19)+"\n", 8)} {
		r := proto.ProcResult{Argv: []string{"make"}, ExitCode: 2, StdoutFile: "b.stdout", StderrFile: "b.stderr", Stderr: out}
		err := BuildError("tut", "a", &r).Error()
		if len(err) > 8<<10 || !utf8.ValidString(err) {
			t.Errorf("a build error of %d bytes (valid UTF-8 %v) from %d bytes of output", len(err), utf8.ValidString(err), len(out))
		}
		if !strings.Contains(err, "logs/b.stderr") {
			t.Errorf("%.300q: does not say where the whole output is", err)
		}
	}
}

// TestNewStep: a program workload needs its program and either host and
// command or both sides and both commands; the plan's line shows the
// commands as the lab wrote them.
func TestNewStep(t *testing.T) {
	src := &kinds.Source{Name: "tut", Hash: strings.Repeat("0", 64)}
	pair := steps.Workload{Workload: kinds.Workload{Name: "w", Tool: "program", Options: kinds.Options{Program: src,
		ServerCommand: []string{"./server", kinds.SelfRef("port")}, ClientCommand: []string{"./client", kinds.SelfRef("server_address")}}},
		ServerHost: "a", ClientHost: "b"}
	s, err := Kind{}.NewOp(&pair)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Describe(), "program w (tut): host a (server) ./server ${self.port}, then host b (client) ./client ${self.server_address}"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	for _, bad := range []steps.Workload{
		{Workload: kinds.Workload{Name: "w", Tool: "program"}, Host: "a"},
		{Workload: kinds.Workload{Name: "w", Tool: "program", Options: kinds.Options{Program: src}}, Host: "a"},
		{Workload: kinds.Workload{Name: "w", Tool: "program", Options: kinds.Options{Program: src, ServerCommand: []string{"x"}}}, ServerHost: "a", ClientHost: "b"},
	} {
		if _, err := (Kind{}).NewOp(&bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestArgv: program's argv hook fills the lab's commands' self.* for one
// trial: on host, the command (no server); between server and client,
// both, with the server's address and GID index as given (the plan's
// placeholders or the run's values) and the devices' names. A self.* the
// trial has no value for stays a placeholder (the plan shows it as the
// lab wrote it), and the run's fill (kinds.Fill) refuses that command,
// naming the workload and the placeholder.
func TestArgv(t *testing.T) {
	self := kinds.SelfRef
	for _, tc := range []struct {
		name                string
		w                   kinds.Workload
		in                  kinds.ArgvIn
		wantServer, wantCli []string
		wantErr             string
	}{
		{"on host", kinds.Workload{Name: "a", Options: kinds.Options{Iterations: 10, Command: []string{"./c", self("port"), self("iterations")}}},
			kinds.ArgvIn{Port: 20020}, nil, []string{"./c", "20020", "10"}, ""},
		{"pair over rdma", kinds.Workload{Name: "v", Options: kinds.Options{
			ServerCommand: []string{"./s", self("port"), self("server_device")},
			ClientCommand: []string{"./c", self("server_address"), "-g" + self("gid_index"), self("client_device"), self("size")}}},
			kinds.ArgvIn{Port: 20010, Trial: kinds.Trial{Size: 4096}, Addr: kinds.ServerAddr,
				Server: kinds.End{Device: "rxe_a", GID: kinds.ServerGID}, Client: kinds.End{Device: "rxe_b"}},
			[]string{"./s", "20010", "rxe_a"}, []string{"./c", "{server.addr}", "-g{server.gid}", "rxe_b", "4096"}, ""},
		{"no size", kinds.Workload{Name: "n", Options: kinds.Options{
			ServerCommand: []string{"./s"}, ClientCommand: []string{"./c", self("size")}}},
			kinds.ArgvIn{Port: 20000, Addr: "10.0.0.1"}, []string{"./s"}, []string{"./c", "${self.size}"}, `workload "n": placeholder ${self.size} in argument 1: it has no value in this trial`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.W = &tc.w
			s, c := Kind{}.Argv(tc.in)
			if d := cmp.Diff(tc.wantServer, kinds.Show(s)); d != "" {
				t.Errorf("server (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantCli, kinds.Show(c)); d != "" {
				t.Errorf("client (-want +got):\n%s", d)
			}
			vals := kinds.Values{kinds.ServerAddr: "10.9.0.1", kinds.ServerGID: "1"}
			_, err := kinds.Fill(tc.w.Name, s, vals)
			if err == nil {
				_, err = kinds.Fill(tc.w.Name, c, vals)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("fill: err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Errorf("fill: %v", err)
			}
		})
	}
}
