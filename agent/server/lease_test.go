package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
)

// keptWire starts an agent as the mux daemon starts a kept one: its work
// dir is <base>/runs/kept/h.
func keptWire(t *testing.T, opts Options) (*wire, string) {
	t.Helper()
	base := filepath.Join(t.TempDir(), "runs")
	opts.WorkDir = filepath.Join(base, "kept", "h")
	return startWire(t, opts), base
}

// leaseRun leases w for run and checks every file the lease's requests
// write lands in the new work dir.
func leaseRun(w *wire, base, run string) {
	w.t.Helper()
	var res proto.LeaseResult
	w.mustCall(proto.MethodLease, proto.LeaseParams{RunID: run}, &res)
	want := filepath.Join(base, run, "h")
	if res.WorkDir != want {
		w.t.Fatalf("lease %q: work dir %q, want %q", run, res.WorkDir, want)
	}
	fi, err := os.Stat(want)
	if err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		w.t.Fatalf("leased work dir %q: %v, %v; want a 0700 folder", want, fi, err)
	}
	w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "echo", Argv: []string{"sh", "-c", "echo " + run + "; pwd"}}, nil)
	var pr proto.ProcResult
	w.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "echo"}, &pr)
	if got := strings.Fields(pr.Stdout); len(got) != 2 || got[0] != run || got[1] != want {
		w.t.Errorf("process of lease %q printed %q, want %q and its cwd %q", run, pr.Stdout, run, want)
	}
	var fl proto.FilesList
	w.mustCall(proto.MethodFilesList, proto.FilesListParams{}, &fl)
	var names []string
	for _, f := range fl.Files {
		names = append(names, f.Path)
	}
	if fl.Root != want || !cmp.Equal(names, []string{"echo.stderr", "echo.stdout"}) {
		w.t.Errorf("files.list after lease %q: root %q files %v; want root %q with echo.stderr, echo.stdout", run, fl.Root, names, want)
	}
	var fd proto.FileData
	w.mustCall(proto.MethodFilesRead, proto.FilesReadParams{Path: "echo.stdout"}, &fd)
	if !strings.HasPrefix(string(fd.Data), run+"\n") {
		w.t.Errorf("files.read echo.stdout in lease %q: %q", run, fd.Data)
	}
	if e := w.call(proto.MethodFilesRead, proto.FilesReadParams{Path: "../../kept/h/x"}, nil); e == nil {
		w.t.Errorf("files.read left the leased work dir")
	}
}

func TestLease(t *testing.T) {
	tests := []struct {
		name string
		// before runs first in the agent's first lease; then a lease for
		// run is sent and must fail with code (or succeed when "").
		before func(w *wire, base string)
		run    string
		code   string
	}{
		{name: "right after start", run: "r1"},
		{name: "after a release", run: "r2", before: func(w *wire, base string) {
			leaseRun(w, base, "r1")
			w.release()
		}},
		{name: "after a release of a lease that never leased", run: "r2", before: func(w *wire, base string) {
			w.mustCall(proto.MethodPing, nil, nil)
			w.release()
		}},
		{name: "mid-lease: after a request", run: "r1", code: proto.CodeBusy, before: func(w *wire, base string) {
			w.mustCall(proto.MethodPing, nil, nil)
		}},
		{name: "mid-lease: a second lease", run: "r2", code: proto.CodeBusy, before: func(w *wire, base string) {
			leaseRun(w, base, "r1")
		}},
		{name: "mid-lease: a process running", run: "r1", code: proto.CodeBusy, before: func(w *wire, base string) {
			w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "s", Argv: []string{"sleep", "1000"}}, nil)
		}},
		{name: "escape by dot-dot", run: "..", code: proto.CodeBadRequest},
		{name: "escape by a path", run: "../../etc", code: proto.CodeBadRequest},
		{name: "absolute", run: "/tmp", code: proto.CodeBadRequest},
		{name: "empty", run: "", code: proto.CodeBadRequest},
		{name: "dot", run: ".", code: proto.CodeBadRequest},
		{name: "too long", run: strings.Repeat("a", 201), code: proto.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, base := keptWire(t, Options{})
			if tt.before != nil {
				tt.before(w, base)
			}
			before := w.srv.WorkDir()
			if tt.code == "" {
				leaseRun(w, base, tt.run)
				return
			}
			e := w.call(proto.MethodLease, proto.LeaseParams{RunID: tt.run}, nil)
			if e == nil || e.Code != tt.code {
				t.Fatalf("lease %q: %v, want code %s", tt.run, e, tt.code)
			}
			if got := w.srv.WorkDir(); got != before {
				t.Errorf("a refused lease moved the work dir from %q to %q", before, got)
			}
			ents, _ := os.ReadDir(base)
			for _, e := range ents {
				if e.Name() != "kept" && e.Name() != "r1" {
					t.Errorf("a refused lease left %q in the runs folder", e.Name())
				}
			}
		})
	}
}

// Two leases in turn, each in its own run folder; the first one's files
// stay where they were written.
func TestLeaseAfterLease(t *testing.T) {
	w, base := keptWire(t, Options{})
	leaseRun(w, base, "r1")
	w.release()
	leaseRun(w, base, "r2")
	w.release()
	leaseRun(w, base, "facts")
	for _, run := range []string{"r1", "r2", "facts"} {
		if _, err := os.Stat(filepath.Join(base, run, "h", "echo.stdout")); err != nil {
			t.Errorf("lease %q: %v", run, err)
		}
	}
}

// A root agent working for a user (--owner): the leased work dir and the
// files in it belong to the user, and a runs folder the user does not own
// is refused, as at start.
func TestLeaseOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	const uid, gid = 64123, 64124
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(home, uid, gid)
	// The user's processes must reach the work dir.
	for d := filepath.Dir(home); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	base := filepath.Join(home, "runs")
	w := startWire(t, Options{WorkDir: filepath.Join(base, "kept", "h"), Owner: &Owner{UID: uid, GID: gid}})
	var res proto.LeaseResult
	w.mustCall(proto.MethodLease, proto.LeaseParams{RunID: "r1"}, &res)
	w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "p", Argv: []string{"true"}}, nil)
	w.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "p"}, nil)
	for _, p := range []string{filepath.Join(base, "r1"), res.WorkDir, filepath.Join(res.WorkDir, "p.stdout")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != uid || st.Gid != gid {
			t.Errorf("%s: owned by %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
	}
	w.release()
	// A run folder someone else planted: not taken over for the user.
	if err := os.Mkdir(filepath.Join(base, "r2"), 0o700); err != nil {
		t.Fatal(err)
	}
	e := w.call(proto.MethodLease, proto.LeaseParams{RunID: "r2"}, nil)
	if e == nil || !strings.Contains(e.Message, "belongs to uid 0") {
		t.Errorf("lease into a folder root owns: %v, want refused", e)
	}
}

func TestRunsBase(t *testing.T) {
	tests := []struct {
		wd, base, leaf string
		ok             bool
	}{
		{"/home/u/.cache/rlab/runs/kept/server", "/home/u/.cache/rlab/runs", "server", true},
		{"/home/u/.cache/rlab/runs/kept/server_ana_", "/home/u/.cache/rlab/runs", "server_ana_", true},
		{"/w/kept/h", "/w", "h", true},
		{"/kept/h", "/", "h", true},
		{"/h", "", "", false},
		{"/", "", "", false},
		{"/a b/h", "", "", false},
	}
	for _, tt := range tests {
		base, leaf, ok := runsBase(tt.wd)
		if base != tt.base || leaf != tt.leaf || ok != tt.ok {
			t.Errorf("runsBase(%q) = %q, %q, %v; want %q, %q, %v", tt.wd, base, leaf, ok, tt.base, tt.leaf, tt.ok)
		}
	}
}

// An agent whose work dir has no runs folder refuses leases.
func TestLeaseWithoutRunsFolder(t *testing.T) {
	w := startWire(t, Options{WorkDir: filepath.Join(t.TempDir(), "a b")})
	if e := w.call(proto.MethodLease, proto.LeaseParams{RunID: "r1"}, nil); e == nil || e.Code != proto.CodeUnsupported {
		t.Errorf("lease: %v, want %s", e, proto.CodeUnsupported)
	}
}

func TestLeaseRequest(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{`{"id":3,"method":"lease","params":{"run_id":"r1"}}`, true},
		{`{"id":6,"method":"\u006cease"}`, true},
		{`{"id":3,"method":"release"}`, false},
		{`{"id":8,"method":"ping","params":{"handle":"lease"}}`, false},
		{`{"id":"x","method":"lease"}`, false}, // answered as a bad request
		{`lease`, false},
	}
	for _, tt := range tests {
		if _, ok := leaseRequest([]byte(tt.line)); ok != tt.want {
			t.Errorf("leaseRequest(%s) = %v, want %v", tt.line, ok, tt.want)
		}
	}
}

// FuzzLeaseRequest: the serve loop's quick test agrees with a full decode.
func FuzzLeaseRequest(f *testing.F) {
	for _, s := range []string{`{"id":3,"method":"lease","params":{"run_id":"r1"}}`, `{"id":6,"method":"\u006cease"}`,
		`{"id":3,"method":"release"}`, `{"id":1,"method":"proc.start","params":{"handle":"lease","argv":["sleep","1"]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var req proto.Request
		full := json.Unmarshal(line, &req) == nil && req.Method == proto.MethodLease
		got, ok := leaseRequest(line)
		if ok != full || ok && (got.ID != req.ID || string(got.Params) != string(req.Params)) {
			t.Errorf("leaseRequest(%q) = %+v, %v; a full decode says lease=%v %+v", line, got, ok, full, req)
		}
	})
}
