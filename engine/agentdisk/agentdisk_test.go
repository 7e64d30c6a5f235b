package agentdisk

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWriteRead: what Write puts on the disk, Read gives back, checked; the
// disk is sparse at its fixed capacity, 0600, and never written over an
// existing file.
func TestWriteRead(t *testing.T) {
	for _, tt := range []struct {
		name string
		bin  []byte
	}{
		{"empty", nil},
		{"one byte", []byte{0x7f}},
		{"not a whole MiB", randomBytes(t, 3<<20+17)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "agent.disk")
			if err := Write(p, tt.bin); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != Capacity || fi.Mode().Perm() != 0o600 {
				t.Errorf("disk is %d bytes, mode %v; want %d, 0600", fi.Size(), fi.Mode().Perm(), Capacity)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, h, err := Read(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.bin) || h.Size != int64(len(tt.bin)) || h.SHA256 != sum(tt.bin) {
				t.Errorf("read back %d bytes, header %+v; want %d bytes with sha256 %s", len(got), h, len(tt.bin), sum(tt.bin))
			}
			if err := Write(p, tt.bin); err == nil {
				t.Error("Write over an existing disk succeeded")
			}
		})
	}
	if err := Write(filepath.Join(t.TempDir(), "big"), make([]byte, MaxBinary+1)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("an agent above MaxBinary: err %v, want one saying the disk holds at most %d", err, MaxBinary)
	}
}

// TestReadRefuses: a disk whose binary does not match its header, or whose
// header is not one Encode makes, is refused.
func TestReadRefuses(t *testing.T) {
	good := Header{Size: 5, SHA256: sum([]byte("hello"))}.Encode()
	set := func(b []byte, off int, s string) []byte {
		c := bytes.Clone(b)
		copy(c[off:], s)
		return c
	}
	for _, tt := range []struct {
		name   string
		header []byte
		data   string
		want   string
	}{
		{"binary differs", good, "jello", "its header says"},
		{"short binary", good, "hel", "read 5 bytes"},
		{"wrong magic", set(good, 0, "RLAB-AGENT-DISC"), "hello", "begins"},
		{"version 2", set(good, len(Magic)+1, "2"), "hello", "begins"},
		{"size not decimal", set(make([]byte, HeaderSize), 0, Magic+" 1\nsize 0x5\nsha256 "+sum([]byte("hello"))+"\n"), "hello", "size line"},
		{"size with a leading zero", set(make([]byte, HeaderSize), 0, Magic+" 1\nsize 05\nsha256 "+sum([]byte("hello"))+"\n"), "hello", "size line"},
		{"size too big", Header{Size: MaxBinary + 1, SHA256: sum(nil)}.Encode(), "", "above the most"},
		{"upper-case sha256", Header{Size: 5, SHA256: strings.ToUpper(sum([]byte("hello")))}.Encode(), "hello", "sha256 line"},
		{"junk after the padding", set(good, HeaderSize-1, "x"), "hello", "after its padding"},
		{"no padding", bytes.Repeat([]byte("a"), HeaderSize), "", "no NUL"},
		{"a fourth line", set(good, bytes.IndexByte(good, 0), "more\n"), "hello", "lines"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			disk := make([]byte, DataOffset+len(tt.data))
			copy(disk, tt.header)
			copy(disk[DataOffset:], tt.data)
			_, _, err := Read(bytes.NewReader(disk))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// FuzzParseHeader: ParseHeader never panics, and a header it accepts is
// exactly the block Encode makes of what it returned (one spelling per
// header: nothing the guest's shell reader could read otherwise).
func FuzzParseHeader(f *testing.F) {
	f.Add(Header{Size: 4886690, SHA256: sum([]byte("agent"))}.Encode())
	f.Add(Header{}.Encode())
	f.Add([]byte(Magic + " 1\nsize 01\nsha256 00\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < HeaderSize {
			b = append(b, make([]byte, HeaderSize-len(b))...)
		}
		h, err := ParseHeader(b)
		if err != nil {
			return
		}
		if !bytes.Equal(h.Encode(), b[:HeaderSize]) {
			t.Fatalf("ParseHeader accepted %q as %+v, which encodes otherwise", b[:80], h)
		}
		if h.Size < 0 || h.Size > MaxBinary || len(h.SHA256) != 64 {
			t.Fatalf("ParseHeader accepted %+v", h)
		}
	})
}

// guestBed is a fake /sys/block and /dev with one disk made by Write (or
// none), and a home folder, for the guest's shell function.
type guestBed struct {
	sys, dev, home string
}

func newGuestBed(t *testing.T, serial string, disk []byte) guestBed {
	t.Helper()
	d := t.TempDir()
	b := guestBed{sys: filepath.Join(d, "sys"), dev: filepath.Join(d, "dev"), home: filepath.Join(d, "home")}
	for _, p := range []string{filepath.Join(b.sys, "vda"), filepath.Join(b.sys, "vdb"), b.dev, b.home} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// vda is the root disk: no serial, as rlab's VMs have it.
	if err := os.WriteFile(filepath.Join(b.sys, "vda", "serial"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if disk != nil {
		if err := os.WriteFile(filepath.Join(b.sys, "vdb", "serial"), []byte(serial+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.dev, "vdb"), disk, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// run runs rlab_disk for hash h and returns its output and what landed at
// the agent's path.
func (b guestBed) run(t *testing.T, h string) (string, []byte) {
	t.Helper()
	a := filepath.Join(b.home, ".cache/rlab/agent", h, "rlab-agent")
	script := GuestFunc(b.sys, b.dev) + `; h=` + h + `; a="$HOME/.cache/rlab/agent/$h/rlab-agent"; rlab_disk; echo "rc=$?"`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = []string{"HOME=" + b.home, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v: %s", err, out)
	}
	got, _ := os.ReadFile(a)
	return string(out), got
}

func diskBytes(t *testing.T, bin []byte) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "d")
	if err := Write(p, bin); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGuestFunc runs the guest's shell reader (bash, dd iflag=direct,
// head, sha256sum: what the Debian guest has) on a disk image in a folder
// standing in for /sys/block and /dev: the agent is installed only when
// the disk holds the build asked for, and otherwise the status line says
// why and nothing is left at the agent's path.
func TestGuestFunc(t *testing.T) {
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(probe, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("dd", "if="+probe, "bs=4096", "count=1", "iflag=direct", "of=/dev/null").CombinedOutput(); err != nil {
		t.Skipf("this file system has no O_DIRECT for the test's disk image: %v: %s", err, out)
	}
	bin := randomBytes(t, 2<<20+4097)
	other := randomBytes(t, 1000)
	good := diskBytes(t, bin)
	corrupt := bytes.Clone(good)
	corrupt[DataOffset+12345] ^= 1
	octal := bytes.Clone(good)
	copy(octal, Header{Size: 5, SHA256: sum(bin)}.Encode())
	copy(octal[bytes.Index(octal, []byte("size "))+5:], "05\n") // size 05: shifts nothing else
	for _, tt := range []struct {
		name    string
		serial  string
		disk    []byte
		want    string
		install bool
	}{
		{"the build asked for", Serial, good, StatusTag + " ok", true},
		{"no disk", "", nil, StatusTag + " fail missing", false},
		{"another serial", "other", good, StatusTag + " fail missing", false},
		{"another build", Serial, diskBytes(t, other), StatusTag + " fail hash " + sum(other), false},
		{"an empty disk", Serial, diskBytes(t, nil), StatusTag + " fail empty", false},
		{"corrupt binary", Serial, corrupt, StatusTag + " fail verify", false},
		{"all zeros", Serial, make([]byte, DataOffset), StatusTag + " fail header", false},
		{"leading zero size", Serial, octal, StatusTag + " fail header", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newGuestBed(t, tt.serial, tt.disk)
			out, got := b.run(t, sum(bin))
			ok, why, found := Status([]byte(out))
			if !strings.Contains(out, tt.want) || !found || ok != tt.install {
				t.Errorf("output %q (ok %v, why %q); want %q", out, ok, why, tt.want)
			}
			if tt.install != bytes.Equal(got, bin) {
				t.Errorf("installed %d bytes (the build: %v); want it installed: %v", len(got), bytes.Equal(got, bin), tt.install)
			}
			if !tt.install && got != nil {
				t.Errorf("%d bytes left at the agent's path", len(got))
			}
			if tt.install {
				fi, err := os.Stat(filepath.Join(b.home, ".cache/rlab/agent", sum(bin), "rlab-agent"))
				if err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("installed agent: %v, mode %v; want 0700", err, fi.Mode().Perm())
				}
			}
			left, _ := filepath.Glob(filepath.Join(b.home, ".cache/rlab/agent/*/rlab-agent.tmp-*"))
			if len(left) > 0 {
				t.Errorf("temp files left: %v", left)
			}
		})
	}
}

// TestStatus reads the guest's status line among other output (a login
// script may print).
func TestStatus(t *testing.T) {
	for _, tt := range []struct {
		out       string
		ok, found bool
		why       string
	}{
		{"motd\n" + StatusTag + " ok\n", true, true, ""},
		{StatusTag + " fail hash abc\nRLAB-PROBE-BEGIN\n", false, true, "hash abc"},
		{"RLAB-PROBE-BEGIN\n", false, false, ""},
		{StatusTag + " fail missing\n" + StatusTag + " ok\n", true, true, ""},
	} {
		ok, why, found := Status([]byte(tt.out))
		if ok != tt.ok || found != tt.found || why != tt.why {
			t.Errorf("Status(%q) = %v, %q, %v; want %v, %q, %v", tt.out, ok, why, found, tt.ok, tt.why, tt.found)
		}
	}
}

// FuzzStatus: Status never panics, finds a status exactly when a line
// begins with the tag, and bounds what it quotes of the guest's text.
func FuzzStatus(f *testing.F) {
	f.Add([]byte("motd\n" + StatusTag + " ok\n"))
	f.Add([]byte(StatusTag + " fail hash " + strings.Repeat("ab", 100) + "\n"))
	f.Add([]byte("RLAB-PROBE-BEGIN\nLinux x86_64\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		ok, why, found := Status(out)
		tagged := false
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), StatusTag+" ") {
				tagged = true
			}
		}
		if found != tagged || ok && why != "" || !found && (ok || why != "") || len(why) > 123 {
			t.Fatalf("Status(%q) = %v, %q, %v", out, ok, why, found)
		}
	})
}
