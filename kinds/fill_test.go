package kinds

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var runValues = Values{ServerGID: "1", ClientGID: "3", PathMTU: "1024", ServerAddr: "10.9.0.1", ServerDev: "rxe0", ClientDev: "rxe_eth1"}

// TestFill: the run replaces each placeholder of a planned argv with
// what it found, inside an argument too; literal braces of a lab's own
// text are text. An unknown, broken or unfilled placeholder is an error
// naming the workload and the placeholder, and no argv comes back.
func TestFill(t *testing.T) {
	for _, tc := range []struct {
		name    string
		argv    []string
		vals    Values
		want    []string
		wantErr string
	}{
		{"perftest client", []string{"ib_write_bw", "-x", string(ClientGID), "-m", string(PathMTU), string(ServerAddr)}, runValues,
			[]string{"ib_write_bw", "-x", "3", "-m", "1024", "10.9.0.1"}, ""},
		{"devices, as the hosts reported them", []string{"ibv_rc_pingpong", "-d", string(ClientDev), "--dev=" + string(ServerDev)}, runValues,
			[]string{"ibv_rc_pingpong", "-d", "rxe_eth1", "--dev=rxe0"}, ""},
		{"inside an argument", []string{"./c", "--gid=" + string(ServerGID) + "," + string(ClientGID)}, runValues, []string{"./c", "--gid=1,3"}, ""},
		{"literal braces", []string{"awk", "{print $1}", "{server.gid}", "{}"}, Values{}, []string{"awk", "{print $1}", "{server.gid}", "{}"}, ""},
		{"nil", nil, runValues, nil, ""},
		{"unfilled", []string{"ib_send_lat", "-m", string(PathMTU)}, Values{ServerGID: "1"}, nil, `workload "w": placeholder {mtu} in argument 2: this run found no value for it`},
		{"unknown", []string{"x", "\x00client.addr\x00"}, runValues, nil, `workload "w": placeholder {client.addr} in argument 1: an unknown placeholder`},
		{"self without a value", []string{"./c", SelfRef("size")}, runValues, nil, `placeholder ${self.size} in argument 1: it has no value in this trial`},
		{"broken", []string{"x", "a\x00mtu"}, runValues, nil, `workload "w": argument 1 (a`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Fill("w", tc.argv, tc.vals)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if got != nil {
					t.Errorf("an argv came back with the error: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestFillNoInjection: a value found at run time (an agent's report)
// cannot add an argument, an option or a placeholder: each placeholder
// takes only its own form of value (a number, an IP address), and
// anything else is refused naming the workload and the placeholder.
func TestFillNoInjection(t *testing.T) {
	argv := []string{"ib_write_bw", "-d", string(ServerDev), "-x", string(ServerGID), "-m", string(PathMTU), "--peer=" + string(ClientDev), string(ServerAddr)}
	for _, tc := range []struct {
		p Value
		v string
	}{
		{ServerAddr, "10.9.0.1 -R"},
		{ServerAddr, "-R"},
		{ServerAddr, "--out_json_file=/etc/passwd"},
		{ServerAddr, ""},
		{ServerAddr, "fe80::1%eth0"},
		{ServerAddr, string(PathMTU)},
		{ServerGID, "1 -R"},
		{ServerGID, "-1"},
		{ServerGID, "1\n2"},
		{ServerGID, string(ServerAddr)},
		{PathMTU, "1024\x00"},
		{PathMTU, ""},
		{ServerDev, "-R"},
		{ServerDev, "rxe0 -R"},
		{ServerDev, ""},
		{ServerDev, strings.Repeat("r", 64)},
		{ServerDev, "rxe/0"},
		{ClientDev, string(ServerDev)},
		{ClientDev, "rxe\n0"},
	} {
		vals := Values{}
		for k, v := range runValues {
			vals[k] = v
		}
		vals[tc.p] = tc.v
		got, err := Fill("bw", argv, vals)
		if err == nil {
			t.Errorf("%s = %q filled: %q", tc.p.Name(), tc.v, got)
			continue
		}
		if !strings.Contains(err.Error(), `workload "bw"`) || !strings.Contains(err.Error(), tc.p.Name()) {
			t.Errorf("%s = %q: error %q names neither the workload nor the placeholder", tc.p.Name(), tc.v, err)
		}
	}
}

// TestShow: a plan prints placeholders by name, a program's unfilled
// self.* as the lab wrote it.
func TestShow(t *testing.T) {
	got := Show([]string{"x", string(ServerGID), "-g" + string(ClientGID), SelfRef("size"), "{a}", string(ServerDev)})
	want := []string{"x", "{server.gid}", "-g{client.gid}", "${self.size}", "{a}", "{server.dev}"}
	if !slices.Equal(got, want) {
		t.Errorf("Show = %q, want %q", got, want)
	}
	// A plan shows the lab's device names.
	got = ShowAs([]string{"-d", string(ServerDev), "--c=" + string(ClientDev), string(ServerGID)}, Values{ServerDev: "rxe_eth1", ClientDev: "rxe_eth2"})
	want = []string{"-d", "rxe_eth1", "--c=rxe_eth2", "{server.gid}"}
	if !slices.Equal(got, want) {
		t.Errorf("ShowAs = %q, want %q", got, want)
	}
}

// FuzzFill: whatever the argv and values, a filled argv has as many
// arguments as the planned one, holds no placeholder mark, and keeps
// every argument that had no placeholder as it was.
func FuzzFill(f *testing.F) {
	f.Add("ib_write_bw\x01-x\x01\x00server.gid\x00\x01{mtu}", "1", "10.0.0.1")
	f.Add("a\x00mtu\x00b\x01\x00\x00", "-R", "x y")
	f.Add("-d\x01\x00server.dev\x00\x01\x00client.dev\x00", "rxe0", "-R")
	f.Fuzz(func(t *testing.T, joined, gid, addr string) {
		argv := strings.Split(joined, "\x01")
		got, err := Fill("f", argv, Values{ServerGID: gid, ClientGID: gid, PathMTU: gid, ServerAddr: addr, ServerDev: addr, ClientDev: gid})
		if err != nil {
			return
		}
		if len(got) != len(argv) {
			t.Fatalf("%q filled to %q: %d arguments, want %d", argv, got, len(got), len(argv))
		}
		for i, a := range got {
			if strings.Contains(a, "\x00") {
				t.Fatalf("argument %d %q still holds a mark", i, a)
			}
			if !strings.Contains(argv[i], "\x00") && a != argv[i] {
				t.Fatalf("argument %d %q changed to %q", i, argv[i], a)
			}
		}
	})
}

// TestOmit: an option whose value the run did not find goes with its
// placeholder; everything else stays in order.
func TestOmit(t *testing.T) {
	m := string(PathMTU)
	for _, c := range []struct {
		name       string
		argv, want []string
	}{
		{"option and value", []string{"ib_write_bw", "-d", "rxe0", "-m", m, "10.0.0.1"}, []string{"ib_write_bw", "-d", "rxe0", "10.0.0.1"}},
		{"inside an argument", []string{"t", "--mtu=" + m, "-x", "1"}, []string{"t", "-x", "1"}},
		{"alone, no option before", []string{m, "a"}, []string{"a"}},
		{"after a non-option", []string{"t", "a", m}, []string{"t", "a"}},
		{"none", []string{"t", "-m", "1024"}, []string{"t", "-m", "1024"}},
		{"nil", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Omit(c.argv, PathMTU); !slices.Equal(got, c.want) {
				t.Errorf("Omit(%q) = %q, want %q", c.argv, got, c.want)
			}
		})
	}
}
