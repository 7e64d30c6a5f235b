// Package agentdisk is the read-only disk that hands the rlab agent to a
// local QEMU VM without an upload (issue 27): its format, the writer rlab
// runs on this machine, a reader (tests, and anyone checking a disk), and
// the shell function the guest runs to take the agent from it.
//
// The disk is raw, of a fixed capacity (Capacity: the guest kernel learns
// a disk's size once, when it probes it, and a guest restored from a
// snapshot keeps the size its template saw), sparse on this machine. Its
// first block is a text header, NUL-padded:
//
//	RLAB-AGENT-DISK 1
//	size <bytes of the binary, decimal>
//	sha256 <its sha256, 64 lower-case hex digits>
//
// and the binary itself starts at DataOffset. QEMU attaches it read-only
// as a virtio-blk device with the serial "rlab-agent", which the guest
// finds in /sys/block/*/serial.
//
// Why a disk: the other ways from host to guest were weighed.
//   - fw_cfg (the host keys already come that way) is read by Linux's
//     qemu_fw_cfg driver one byte per port access: a 5 MB agent is millions
//     of exits, seconds under TCG; QEMU also holds every fw_cfg file in its
//     own memory, per VM.
//   - 9p or virtiofs need a driver (and, for virtiofs, a daemon) on both
//     sides and share a host folder live, which is more than handing over
//     one file, and a writable path into this machine if misconfigured.
//   - A read-only virtio-blk disk is DMA (tens of MB/s under TCG), needs
//     nothing in the image but the virtio_blk driver it boots from, and
//     the guest cannot write it (QEMU opens the file read-only).
//
// A guest restored from a snapshot (engine/vm) saw another agent's disk
// when its template booted: its page cache may hold that disk's blocks. The
// guest therefore reads with O_DIRECT (dd iflag=direct), which always goes
// to the device.
//
// Nothing read from the disk is trusted: the guest copies the binary to a
// temp name, checks its sha256 against the hash the controller sent in the
// command (not the header's), and only then renames it to the cached
// agent's path; the agent's hello then reports its own hash, which the
// controller checks as for any install. When the disk is missing or does
// not hold that build, the guest says why on a status line (StatusTag) and
// the controller uploads the agent as it always did.
//
// It imports only the standard library (internal/archtest checks it).
package agentdisk

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

const (
	// Serial is the virtio-blk serial the guest finds the disk by.
	Serial = "rlab-agent"
	// Magic and Version begin the header.
	Magic   = "RLAB-AGENT-DISK"
	Version = 1
	// HeaderSize is the header block: what ParseHeader reads.
	HeaderSize = 4096
	// DataOffset is where the binary starts: 1 MiB, so the guest reads it
	// with dd bs=1M skip=1 (large direct reads, few virtio requests).
	DataOffset = 1 << 20
	// Capacity is the disk's size, whatever it holds: fixed, so a guest
	// restored from a snapshot made with another agent sees the size it
	// probed. MaxBinary is the largest agent it holds.
	Capacity  = 64 << 20
	MaxBinary = Capacity - DataOffset
	// StatusTag begins the line the guest prints: "RLAB-AGENT-DISK ok" or
	// "RLAB-AGENT-DISK fail <why> [detail]".
	StatusTag = Magic
)

// Header is what the disk says it holds.
type Header struct {
	Size   int64
	SHA256 string // hex
}

// Encode is the header block (HeaderSize bytes).
func (h Header) Encode() []byte {
	b := make([]byte, HeaderSize)
	copy(b, fmt.Sprintf("%s %d\nsize %d\nsha256 %s\n", Magic, Version, h.Size, h.SHA256))
	return b
}

// ParseHeader reads a header block: the three lines, then only NUL bytes.
// It refuses anything else, so a header it accepts is one Encode makes.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, fmt.Errorf("agent disk header: %d bytes, want %d", len(b), HeaderSize)
	}
	b = b[:HeaderSize]
	end := bytes.IndexByte(b, 0)
	if end < 0 {
		return h, errors.New("agent disk header: no NUL padding")
	}
	if bytes.ContainsFunc(b[end:], func(r rune) bool { return r != 0 }) {
		return h, errors.New("agent disk header: bytes after its padding began")
	}
	lines := strings.Split(string(b[:end]), "\n")
	if len(lines) != 4 || lines[3] != "" {
		return h, fmt.Errorf("agent disk header: %d lines, want 3 each ending in a newline", len(lines)-1)
	}
	if lines[0] != Magic+" "+strconv.Itoa(Version) {
		return h, fmt.Errorf("agent disk header: begins %q, want %q", truncate(lines[0], 40), Magic+" "+strconv.Itoa(Version))
	}
	size, ok := strings.CutPrefix(lines[1], "size ")
	n, err := strconv.ParseInt(size, 10, 64)
	if !ok || err != nil || n < 0 || strconv.FormatInt(n, 10) != size {
		return h, fmt.Errorf("agent disk header: size line %q", truncate(lines[1], 40))
	}
	if n > MaxBinary {
		return h, fmt.Errorf("agent disk header: size %d above the most the disk holds (%d)", n, MaxBinary)
	}
	sum, ok := strings.CutPrefix(lines[2], "sha256 ")
	if d, err := hex.DecodeString(sum); !ok || err != nil || len(d) != sha256.Size || strings.ToLower(sum) != sum {
		return h, fmt.Errorf("agent disk header: sha256 line %q", truncate(lines[2], 80))
	}
	h.Size, h.SHA256 = n, sum
	return h, nil
}

// Write makes the disk at path holding bin (nil: an empty disk, which every
// guest reports as not holding its agent), created 0600 and never over an
// existing file: only rlab makes it, in a folder of its own.
func Write(path string, bin []byte) error {
	if len(bin) > MaxBinary {
		return fmt.Errorf("agent disk %s: the agent is %d bytes, the disk holds at most %d", path, len(bin), MaxBinary)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("agent disk: %w", err)
	}
	s := sha256.Sum256(bin)
	h := Header{Size: int64(len(bin)), SHA256: hex.EncodeToString(s[:])}
	_, err = f.Write(h.Encode())
	if err == nil {
		_, err = f.WriteAt(bin, DataOffset)
	}
	if err == nil {
		err = f.Truncate(Capacity) // sparse: the gaps take no space
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("agent disk %s: %w", path, err)
	}
	return nil
}

// Read returns the binary a disk holds, checked against its header's size
// and sha256.
func Read(r io.ReaderAt) ([]byte, Header, error) {
	b := make([]byte, HeaderSize)
	if _, err := r.ReadAt(b, 0); err != nil {
		return nil, Header{}, fmt.Errorf("agent disk header: %w", err)
	}
	h, err := ParseHeader(b)
	if err != nil {
		return nil, h, err
	}
	bin := make([]byte, h.Size)
	if _, err := r.ReadAt(bin, DataOffset); err != nil && !(errors.Is(err, io.EOF) && h.Size == 0) {
		return nil, h, fmt.Errorf("agent disk: read %d bytes: %w", h.Size, err)
	}
	if s := sha256.Sum256(bin); hex.EncodeToString(s[:]) != h.SHA256 {
		return nil, h, fmt.Errorf("agent disk: the binary's sha256 is %x, its header says %s", s, h.SHA256)
	}
	return bin, h, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// GuestFunc is the shell function rlab_disk the guest runs to take the
// agent from the disk: it finds the disk by its serial among sysBlock's
// devices ("/sys/block"; its device node under devDir, "/dev"), reads the
// header and the binary with O_DIRECT, and installs the binary at "$a" if
// and only if its sha256 is "$h" — both set by the caller, $h to a hash the
// controller chose (hex only). It prints one status line (StatusTag) and
// returns 0 when "$a" is then that build.
//
// What the disk says is never run or evaluated: the header's words are
// compared as strings, the size is checked to be decimal digits (no
// leading zero, which the shell's arithmetic reads as octal) before
// arithmetic uses it, and globbing is off while the header is split.
// sysBlock and devDir are rlab's own constants (tests point them at a
// folder of their own).
func GuestFunc(sysBlock, devDir string) string {
	fail := `{ echo "` + StatusTag + ` fail $1${2:+ $2}"; return 1; }`
	return `rlab_disk_fail() ` + fail + `; ` +
		`rlab_disk() { ` +
		`v=; for s in ` + sysBlock + `/*/serial; do [ -r "$s" ] || continue; x=; read -r x <"$s" 2>/dev/null; ` +
		`if [ "$x" = ` + Serial + ` ]; then v=${s%/serial}; v=` + devDir + `/${v##*/}; break; fi; done; ` +
		`[ -n "$v" ] || { rlab_disk_fail missing; return 1; }; ` +
		`set -f; set -- $(dd if="$v" bs=4096 count=1 iflag=direct 2>/dev/null | head -n 3); set +f; ` +
		`[ "$1 $2 $3 $5 $#" = "` + Magic + ` ` + strconv.Itoa(Version) + ` size sha256 6" ] || { rlab_disk_fail header; return 1; }; ` +
		`n=$4; case $n in ''|*[!0-9]*|0?*) rlab_disk_fail header; return 1;; esac; ` +
		`[ ${#n} -le 9 ] && [ "$n" -le ` + strconv.Itoa(MaxBinary) + ` ] || { rlab_disk_fail size "$n"; return 1; }; ` +
		`[ "$n" -gt 0 ] || { rlab_disk_fail empty; return 1; }; ` +
		`[ "$6" = "$h" ] || { rlab_disk_fail hash "$6"; return 1; }; ` +
		`command -v sha256sum >/dev/null 2>&1 || { rlab_disk_fail nosha; return 1; }; ` +
		`r="$HOME/.cache/rlab"; d="$r/agent/$h"; t="$a.tmp-disk$$"; ` +
		`(umask 077; mkdir -p "$d") && chmod 700 "$r" "$r/agent" "$d" || { rlab_disk_fail mkdir; return 1; }; ` +
		`rm -f "$t"; (umask 077; set -C; dd if="$v" bs=1M skip=` + strconv.Itoa(DataOffset>>20) + ` count=$(( (n + 1048575) / 1048576 )) iflag=direct 2>/dev/null | head -c "$n" >"$t") || { rm -f "$t"; rlab_disk_fail read; return 1; }; ` +
		`s=$(sha256sum <"$t"); case $s in "$h "*) ;; *) rm -f "$t"; rlab_disk_fail verify "${s%% *}"; return 1;; esac; ` +
		`{ chmod 700 "$t" && mv -f "$t" "$a"; } || { rm -f "$t"; rlab_disk_fail rename; return 1; }; ` +
		`echo "` + StatusTag + ` ok"; }`
}

// Status is what the guest's status line said: OK, or why the disk did not
// give the agent ("missing", "hash <what the disk holds>", ...). Found is
// false when out has no status line (the disk was not tried).
func Status(out []byte) (ok bool, why string, found bool) {
	for _, l := range strings.Split(string(out), "\n") {
		rest, cut := strings.CutPrefix(strings.TrimSpace(l), StatusTag+" ")
		if !cut {
			continue
		}
		found = true
		if rest == "ok" {
			ok, why = true, ""
			continue
		}
		ok, why = false, truncate(strings.TrimPrefix(rest, "fail "), 120)
	}
	return ok, why, found
}
