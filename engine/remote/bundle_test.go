package remote

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

var update = flag.Bool("update", false, "rewrite testdata/bundle seeds")

type entry struct {
	name string
	typ  byte
	body string
	size int64 // header size when not len(body)
	pax  map[string]string
	link string
}

// tarOf writes entries as the agent would (PAX), whatever they say.
func tarOf(t testing.TB, es []entry, end bool) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Size: int64(len(e.body)), Mode: 0o600, Linkname: e.link, Format: tar.FormatPAX, PAXRecords: e.pax}
		if e.typ == 0 {
			h.Typeflag = tar.TypeReg
		}
		if e.size != 0 {
			h.Size = e.size
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if end {
		tw.Close()
	} else {
		tw.Flush()
	}
	return b.Bytes()
}

func reg(name, body string) entry { return entry{name: name, body: body} }

var bundleListing = []proto.FileInfo{
	{Path: "a.log", Size: 5, SHA256: sum([]byte("alpha"))},
	{Path: "logs/b.log", Size: 5, SHA256: sum([]byte("bravo"))},
}

func TestReadBundleHostile(t *testing.T) {
	a, b := reg("a.log", "alpha"), reg("logs/b.log", "bravo")
	tests := []struct {
		name   string
		stream []byte
		want   []string // error substrings, in order
		landed []string // files that must land (all others must not)
		got    bool
	}{
		{name: "good", stream: tarOf(t, []entry{a, b}, true), landed: []string{"a.log", "logs/b.log"}, got: true},
		{name: "dot-dot entry", stream: tarOf(t, []entry{reg("../a.log", "alpha"), b}, true), want: []string{`"../a.log": not a file we asked for`}, got: true},
		{name: "absolute entry", stream: tarOf(t, []entry{reg("/etc/passwd", "alpha")}, true), want: []string{`"/etc/passwd": not a file we asked for`}, got: true},
		{name: "symlink entry", stream: tarOf(t, []entry{{name: "a.log", typ: tar.TypeSymlink, link: "/etc/passwd"}, b}, true), want: []string{"not a regular file (tar type '2')"}, got: true},
		{name: "hard link entry", stream: tarOf(t, []entry{{name: "a.log", typ: tar.TypeLink, link: "/etc/shadow"}}, true), want: []string{"refusing links and devices"}, got: true},
		{name: "device entry", stream: tarOf(t, []entry{{name: "a.log", typ: tar.TypeChar}}, true), want: []string{"not a regular file (tar type '3')"}, got: true},
		{name: "directory entry", stream: tarOf(t, []entry{{name: "logs/b.log", typ: tar.TypeDir}}, true), want: []string{"not a regular file (tar type '5')"}, got: true},
		{name: "longer than listed", stream: tarOf(t, []entry{a, reg("logs/b.log", "bravo and much more")}, true), want: []string{"19 bytes, more than the 5 listed"}, landed: []string{"a.log"}, got: true},
		{name: "shorter than listed", stream: tarOf(t, []entry{reg("a.log", "alp"), b}, true), want: []string{"a.log: got 3 bytes"}, landed: []string{"logs/b.log"}, got: true},
		{name: "sha mismatch", stream: tarOf(t, []entry{reg("a.log", "ALPHA"), b}, true), want: []string{"a.log: got 5 bytes with sha256"}, landed: []string{"logs/b.log"}, got: true},
		{name: "grown on the host", stream: tarOf(t, []entry{{name: "a.log", body: "alpha", pax: map[string]string{proto.BundleSize: "99"}}, b}, true), want: []string{"a.log: grew to 99 bytes"}, landed: []string{"logs/b.log"}, got: true},
		{name: "agent could not send it", stream: tarOf(t, []entry{{name: "a.log", pax: map[string]string{proto.BundleError: "permission denied"}}, b}, true), want: []string{"a.log: the host could not send it: permission denied"}, landed: []string{"logs/b.log"}, got: true},
		{name: "sent twice", stream: tarOf(t, []entry{a, a}, true), want: []string{`"a.log": sent twice`}, landed: []string{"a.log"}, got: true},
		{name: "missing entry", stream: tarOf(t, []entry{b}, true), want: []string{"a.log: missing from the bundle"}, landed: []string{"logs/b.log"}, got: true},
		{name: "cut mid-entry", stream: tarOf(t, []entry{a, b}, true)[:1024+512+2], want: []string{"logs/b.log: read bundle: unexpected EOF"}, landed: []string{"a.log"}, got: true},
		{name: "not tar", stream: []byte("Welcome to the lab host\n{\"magic\":\"rlab-agent\"}\n"), want: []string{"read bundle"}},
		{name: "empty", stream: nil, want: []string{"a.log: missing", "logs/b.log: missing"}},
		{name: "endless padding after the files", stream: append(tarOf(t, []entry{a, b}, false), make([]byte, 10<<20)...), landed: []string{"a.log", "logs/b.log"}, got: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := t.TempDir()
			var landed int64
			n, got, errs := readBundle(bytes.NewReader(tc.stream), bundleListing, newDests(dst), func(k int64) { landed += k })
			if got != tc.got {
				t.Errorf("got = %v, want %v", got, tc.got)
			}
			if n != landed {
				t.Errorf("wrote %d bytes, told progress of %d", n, landed)
			}
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			all := strings.Join(msgs, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("errors\n%s\nlack %q", all, w)
				}
			}
			if len(tc.want) == 0 && len(errs) > 0 {
				t.Errorf("unexpected errors:\n%s", all)
			}
			if len(tc.want) > 0 && len(errs) == 0 {
				t.Errorf("no error")
			}
			want := map[string][]byte{}
			for _, p := range tc.landed {
				want[p] = map[string][]byte{"a.log": []byte("alpha"), "logs/b.log": []byte("bravo")}[p]
			}
			checkTree(t, dst, want)
		})
	}
}

// The seeds of FuzzReadBundle: testdata/bundle/*.tar (go test -run
// TestBundleSeeds -update rewrites them).
func TestBundleSeeds(t *testing.T) {
	seeds := map[string][]byte{
		"good.tar":        tarOf(t, []entry{reg("a.log", "alpha"), reg("logs/b.log", "bravo")}, true),
		"symlink.tar":     tarOf(t, []entry{{name: "a.log", typ: tar.TypeSymlink, link: "/etc/passwd"}}, true),
		"dotdot.tar":      tarOf(t, []entry{reg("../a.log", "alpha")}, true),
		"grown.tar":       tarOf(t, []entry{{name: "a.log", body: "alpha", pax: map[string]string{proto.BundleSize: "99"}}}, true),
		"error-entry.tar": tarOf(t, []entry{{name: "a.log", pax: map[string]string{proto.BundleError: "gone"}}, reg("logs/b.log", "bravo")}, true),
		"sums.tar":        tarOf(t, []entry{{name: "a.log", pax: map[string]string{proto.BundleSize: "5", proto.BundleSHA256: sum([]byte("alpha"))}}}, true),
	}
	for name, b := range seeds {
		p := filepath.Join("testdata", "bundle", name)
		if *update {
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(old, b) {
			t.Errorf("%s is stale (go test -run TestBundleSeeds -update): %v", p, err)
		}
	}
}

// Whatever a host streams, nothing lands outside the destination, no
// .part file is left, and what lands is what was listed; read as sums, it
// is an answer or an error.
func FuzzReadBundle(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/bundle/*.tar")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Files are made and removed for every input: on tmpfs when there is
	// one (a loaded disk makes that the whole cost).
	base := f.TempDir()
	if d, err := os.MkdirTemp("/dev/shm", "rlab-fuzz-bundle-"); err == nil {
		base = d
		f.Cleanup(func() { os.RemoveAll(d) })
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// One folder per input made by hand: t.TempDir per input slows
		// the fuzz engine to a crawl.
		top, err := os.MkdirTemp(base, "in")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(top)
		dst := filepath.Join(top, "dst")
		os.Mkdir(dst, 0o700)
		readSums(bytes.NewReader(b), bundleListing)
		n, _, errs := readBundle(bytes.NewReader(b), bundleListing, newDests(dst), nil)
		if n > 10 {
			t.Fatalf("wrote %d bytes, at most 10 listed", n)
		}
		good := map[string]string{"a.log": "alpha", "logs/b.log": "bravo"}
		filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dst, p)
			w, ok := good[rel]
			if !ok {
				t.Fatalf("unexpected file %s (errors %v)", rel, errors.Join(errs...))
			}
			if got, _ := os.ReadFile(p); string(got) != w {
				t.Fatalf("%s holds %q", rel, got)
			}
			return nil
		})
	})
}

func TestReadSumsHostile(t *testing.T) {
	sumOf := func(s string) map[string]string {
		return map[string]string{proto.BundleSize: "5", proto.BundleSHA256: sum([]byte(s))}
	}
	tests := []struct {
		name    string
		stream  []byte
		wantErr string            // of the stream
		want    map[string]string // path -> sha or error text
	}{
		{name: "good", stream: tarOf(t, []entry{{name: "a.log", pax: sumOf("alpha")}, {name: "logs/b.log", pax: sumOf("bravo")}}, true),
			want: map[string]string{"a.log": sum([]byte("alpha")), "logs/b.log": sum([]byte("bravo"))}},
		{name: "not asked", stream: tarOf(t, []entry{{name: "../x", pax: sumOf("alpha")}}, true), wantErr: "not a file we asked for"},
		{name: "twice", stream: tarOf(t, []entry{{name: "a.log", pax: sumOf("alpha")}, {name: "a.log", pax: sumOf("alpha")}}, true), wantErr: "sent twice"},
		{name: "with data", stream: tarOf(t, []entry{{name: "a.log", body: "alpha", pax: sumOf("alpha")}}, true), wantErr: "not an empty regular entry"},
		{name: "symlink", stream: tarOf(t, []entry{{name: "a.log", typ: tar.TypeSymlink, link: "/"}}, true), wantErr: "not an empty regular entry"},
		{name: "bad hex", stream: tarOf(t, []entry{{name: "a.log", pax: map[string]string{proto.BundleSize: "5", proto.BundleSHA256: "zz"}}}, true),
			want: map[string]string{"a.log": "malformed sum"}},
		{name: "error entry", stream: tarOf(t, []entry{{name: "a.log", pax: map[string]string{proto.BundleError: "gone"}}}, true),
			want: map[string]string{"a.log": "could not hash it: gone"}},
		{name: "not tar", stream: []byte("hello\n"), wantErr: "read sums"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sums, err := readSums(bytes.NewReader(tc.stream), bundleListing)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, w := range tc.want {
				s := sums[p]
				got := s.sha
				if s.err != nil {
					got = s.err.Error()
				}
				if !strings.Contains(got, w) {
					t.Errorf("%s: %q, want %q", p, got, w)
				}
			}
		})
	}
}
