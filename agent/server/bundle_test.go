package server

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
)

type bundleEntry struct {
	Name, Err, HostSize string
	Size                int64
	SHA                 string
}

func readEntries(t *testing.T, b []byte) []bundleEntry {
	t.Helper()
	var got []bundleEntry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("bundle is not a tar stream: %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			t.Errorf("entry %q has type %q", h.Name, h.Typeflag)
		}
		data, _ := io.ReadAll(tr)
		s := sha256.Sum256(data)
		e := bundleEntry{Name: h.Name, Err: h.PAXRecords[proto.BundleError], HostSize: h.PAXRecords[proto.BundleSize], Size: h.Size}
		if len(data) > 0 {
			e.SHA = hex.EncodeToString(s[:])[:8]
		}
		got = append(got, e)
	}
}

func sha8(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:])[:8] }

func TestBundle(t *testing.T) {
	wd := t.TempDir()
	os.MkdirAll(filepath.Join(wd, "logs"), 0o700)
	os.WriteFile(filepath.Join(wd, "a.log"), []byte("alpha"), 0o600)
	os.WriteFile(filepath.Join(wd, "logs", "b.log"), []byte("bravo bravo"), 0o600)
	os.WriteFile(filepath.Join(wd, "grown.log"), []byte("0123456789"), 0o600)
	os.WriteFile(filepath.Join(wd, "shrunk.log"), []byte("abc"), 0o600)
	os.Symlink("/etc/hostname", filepath.Join(wd, "link"))
	os.Symlink("logs", filepath.Join(wd, "dirlink"))
	req := proto.BundleRequest{Files: []proto.FileInfo{
		{Path: "a.log", Size: 5},
		{Path: "logs/b.log", Size: 11},
		{Path: "grown.log", Size: 4},
		{Path: "shrunk.log", Size: 8},
		{Path: "missing.log", Size: 1},
		{Path: "link", Size: 1},
		{Path: "../etc/passwd", Size: 1},
		{Path: "/etc/passwd", Size: 1},
		{Path: "logs", Size: 0},
		{Path: "x", Size: -1},
	}}
	var out bytes.Buffer
	if err := Bundle(context.Background(), wd, req, &out); err != nil {
		t.Fatal(err)
	}
	got := readEntries(t, out.Bytes())
	// Errors are compared by their start.
	for i := range got {
		if got[i].Err != "" {
			got[i].Err = strings.SplitN(got[i].Err, ":", 2)[0]
		}
	}
	want := []bundleEntry{
		{Name: "a.log", Size: 5, HostSize: "5", SHA: sha8("alpha")},
		{Name: "logs/b.log", Size: 11, HostSize: "11", SHA: sha8("bravo bravo")},
		{Name: "grown.log", Size: 4, HostSize: "10", SHA: sha8("0123")}, // cut at the listed size
		{Name: "shrunk.log", Size: 3, HostSize: "3", SHA: sha8("abc")},
		{Name: "missing.log", Err: "statat missing.log"},
		{Name: "link", Err: "not a regular file (L---------); refusing it"},
		{Name: "../etc/passwd", Err: "not a path inside the work dir"},
		{Name: "/etc/passwd", Err: "not a path inside the work dir"},
		{Name: "logs", Err: "not a regular file (d---------); refusing it"},
		{Name: "x", Err: "negative size requested"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("bundle entries (-want +got):\n%s", d)
	}
}

func TestBundleRefusesWorkDir(t *testing.T) {
	wd := t.TempDir()
	link := filepath.Join(t.TempDir(), "wd")
	os.Symlink(wd, link)
	tests := []struct {
		name, dir, want string
		root            bool
	}{
		{name: "symlinked work dir", dir: link, want: "not a directory"},
		{name: "missing work dir", dir: filepath.Join(wd, "nope"), want: "no such file"},
		{name: "another user's work dir", dir: wd, want: "belongs to uid 4242", root: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root {
				if os.Geteuid() != 0 {
					t.Skip("needs root to give the work dir away")
				}
				if err := os.Chown(wd, 4242, 4242); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			err := Bundle(context.Background(), tc.dir, proto.BundleRequest{Files: []proto.FileInfo{{Path: "a", Size: 1}}}, &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("a refused work dir wrote %d bytes", out.Len())
			}
		})
	}
}

func TestBundleHashOnly(t *testing.T) {
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "a.pcap"), []byte("0123456789"), 0o600)
	req := proto.BundleRequest{HashOnly: true, Files: []proto.FileInfo{
		{Path: "a.pcap", Size: 10},
		{Path: "a.pcap", Size: 4}, // grown since: the sum of the listed bytes, and the real size
		{Path: "gone.pcap", Size: 4},
	}}
	var out bytes.Buffer
	if err := Bundle(context.Background(), wd, req, &out); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&out)
	var got []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		got = append(got, fmt.Sprintf("%s size=%d host=%s sha=%.8s err=%.6s", h.Name, h.Size, h.PAXRecords[proto.BundleSize], h.PAXRecords[proto.BundleSHA256], h.PAXRecords[proto.BundleError]))
	}
	want := []string{
		"a.pcap size=0 host=10 sha=" + sha8("0123456789") + " err=",
		"a.pcap size=0 host=10 sha=" + sha8("0123") + " err=",
		"gone.pcap size=0 host= sha= err=statat",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hash-only entries (-want +got):\n%s", d)
	}
}

func TestFilesListHashMax(t *testing.T) {
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "small.log"), []byte("abc"), 0o600)
	os.WriteFile(filepath.Join(wd, "big.pcap"), make([]byte, 100), 0o600)
	s, err := New(Options{WorkDir: wd, Hash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		params  string
		wantBig string
	}{
		{`{}`, hex.EncodeToString(func() []byte { h := sha256.Sum256(make([]byte, 100)); return h[:] }())},
		{`{"hash_max": 100}`, hex.EncodeToString(func() []byte { h := sha256.Sum256(make([]byte, 100)); return h[:] }())},
		{`{"hash_max": 99}`, ""},
	} {
		res, err := s.filesList(context.Background(), nil, []byte(tc.params))
		if err != nil {
			t.Fatal(err)
		}
		l := res.(proto.FilesList)
		got := map[string]string{}
		for _, f := range l.Files {
			got[f.Path] = f.SHA256
		}
		if got["big.pcap"] != tc.wantBig || got["small.log"] != hex.EncodeToString(func() []byte { h := sha256.Sum256([]byte("abc")); return h[:] }()) {
			t.Errorf("%s: listed sums %v", tc.params, got)
		}
	}
}
