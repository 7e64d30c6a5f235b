package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/rundir"
)

// DefaultMaxPullBytes is the default cap on the bytes pulled from one host
// (PullOptions.MaxBytes): generous for captures, but a host cannot fill the
// controller's disk.
const DefaultMaxPullBytes int64 = 20 << 30

// bigCopies bounds the SFTP copies under way in this process, all hosts
// together: each holds about 4.5 MiB of read buffers, and a few per core
// already keep the cores busy (a fetch from 200 hosts stays in bounded
// memory).
var bigCopies = make(chan struct{}, max(8, 4*runtime.GOMAXPROCS(0)))

// BundleMax is the size up to which a file travels in the bundle (one tar
// stream per Pull) rather than by SFTP.
const BundleMax int64 = 1 << 20

// PullOptions tune a Pull.
type PullOptions struct {
	// MaxBytes caps the bytes pulled from this host, all Pulls on the Agent
	// together; a listing over it is refused before anything is copied. 0
	// means DefaultMaxPullBytes; negative, no cap.
	MaxBytes int64
	// Progress, when set, is called as bytes land (never concurrently) with
	// the host's name, the bytes of this Pull written so far and the total it
	// will write; a last call has done == total when everything landed.
	Progress func(host string, done, total int64)
	// Filter, when set, may wrap the writer a file's bytes go to on their
	// way to its .part file (nil: as they are), e.g. to mask secrets; its
	// Close flushes and must not close w. The size and sha256 the agent
	// listed are checked on the bytes as pulled.
	Filter func(path string, w io.Writer) io.WriteCloser
	// Name, when set, is where a file lands, relative to dstDir, from its
	// path on the host (nil: that path), e.g. with the sensitive values a
	// workload put in its file names masked. Distinct paths must keep
	// distinct names (the caller drops the others).
	Name func(path string) string
}

// Pull is PullWith with the default options.
func (a *Agent) Pull(ctx context.Context, files []proto.FileInfo, dstDir string) (int64, error) {
	return a.PullWith(ctx, files, dstDir, PullOptions{})
}

// PullWith copies files from the agent's work dir into dstDir, each to a
// .part file first, verified against the size and sha256 the agent listed,
// then renamed. A big file listed without a sha256 (files.list with
// FilesListOptions.HashMax) is checked against the sum the host computes
// while it is copied. Files up to BundleMax come in one tar stream from
// `rlab-agent bundle` (one round trip for all of them); bigger ones by SFTP
// with large reads in flight. A path that is not local (absolute, "..",
// empty) is refused, as is anything on the host that is not a regular file
// (a symlink out) and a file that changed after the listing. The listing is
// refused as a whole when it exceeds the host's byte cap or the free space
// of dstDir's file system. It returns the bytes written; every file is
// tried and the first error is returned, with a count of the others.
func (a *Agent) PullWith(ctx context.Context, files []proto.FileInfo, dstDir string, o PullOptions) (int64, error) {
	var errs []error
	var ok []proto.FileInfo
	var total int64
	for _, f := range files {
		if _, err := ConfinedPath(dstDir, localName(o.Name, f.Path)); err != nil {
			errs = append(errs, err)
			continue
		}
		if f.Size < 0 {
			errs = append(errs, fmt.Errorf("refusing %q: listed with a negative size", f.Path))
			continue
		}
		ok = append(ok, f)
		total += f.Size
	}
	if len(ok) == 0 {
		return 0, a.pullErr(errs)
	}
	release, err := a.reserve(ok, total, o.MaxBytes)
	if err != nil {
		return 0, err
	}
	defer release()
	book, err := reserveDisk(dstDir, total, len(ok), a.Host)
	if err != nil {
		return 0, err
	}
	defer book.release()

	d := newDests(dstDir)
	d.filter, d.name = o.Filter, o.Name
	var mu sync.Mutex // errs, progress calls
	var done int64    // under mu: progress calls see it grow
	land := func(n int64) {
		a.pulled.Add(n)
		book.land(n)
		mu.Lock()
		done += n
		if o.Progress != nil {
			o.Progress(a.Host, done, total)
		}
		mu.Unlock()
	}
	addErrs := func(e ...error) {
		mu.Lock()
		errs = append(errs, e...)
		mu.Unlock()
	}
	var small, big []proto.FileInfo
	for _, f := range ok {
		if f.Size <= BundleMax {
			small = append(small, f)
		} else {
			big = append(big, f)
		}
	}
	var (
		wg       sync.WaitGroup
		fallback []proto.FileInfo
	)
	if len(small) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, fb, e := a.pullBundle(ctx, small, d, land)
			if fb {
				// Not an agent that bundles (or no exec session):
				// SFTP one file at a time does the same, slower.
				fallback = small
				return
			}
			addErrs(e...)
		}()
	}
	sftpAll := func(files []proto.FileInfo) {
		if len(files) == 0 {
			return
		}
		var unsummed []proto.FileInfo
		for _, f := range files {
			// Small files listed without a sum (an agent that cannot
			// bundle) are checked by size, as the bundle does.
			if f.SHA256 == "" && f.Size > BundleMax {
				unsummed = append(unsummed, f)
			}
		}
		var sums *hostSums
		if len(unsummed) > 0 {
			sums = a.startHostSums(ctx, unsummed)
		}
		sc, err := a.sftpClient()
		if err != nil {
			// The agent's own stream carries them instead.
			addErrs(a.pullWithoutSFTP(ctx, files, d, land, sums, err)...)
			return
		}
		var fw sync.WaitGroup
		sem := make(chan struct{}, 2) // a few files at once, each with its reads in flight
		for _, f := range sortedBySize(files) {
			fw.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; fw.Done() }()
				select {
				case bigCopies <- struct{}{}:
				case <-ctx.Done():
					addErrs(fmt.Errorf("%s: %w", f.Path, ctx.Err()))
					return
				}
				defer func() { <-bigCopies }()
				if err := a.pullSFTP(ctx, sc, f, d, land, sums); err != nil {
					addErrs(err)
				}
			}()
		}
		fw.Wait()
	}
	sftpAll(big)
	wg.Wait()
	sftpAll(fallback)
	mu.Lock()
	defer mu.Unlock()
	return done, a.pullErr(errs)
}

// pullWithoutSFTP pulls files SFTP would have carried (it did not start:
// why) in a bundle, a big file listed without a sha256 checked against the
// host's sum (sums); a file neither carries is named, with why.
func (a *Agent) pullWithoutSFTP(ctx context.Context, files []proto.FileInfo, d *dests, land func(int64), sums *hostSums, why error) []error {
	var send []proto.FileInfo
	var failed []error
	for _, f := range files {
		if f.SHA256 == "" && f.Size > BundleMax && sums != nil {
			hs, err := sums.get(ctx, f.Path)
			if err != nil {
				failed = append(failed, fmt.Errorf("%s: not pulled: %w, and the host gave no sha256 to check a bundle of it by: %w", f.Path, why, err))
				continue
			}
			f.SHA256 = hs.sha
		}
		send = append(send, f)
	}
	if len(send) == 0 {
		return failed
	}
	_, fallback, e := a.pullBundle(ctx, send, d, land)
	if fallback {
		for _, f := range send {
			failed = append(failed, fmt.Errorf("%s: not pulled: %w, and the agent cannot bundle it", f.Path, why))
		}
		return failed
	}
	return append(failed, e...)
}

// pullErr names the host and the first failure, and counts the others.
func (a *Agent) pullErr(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("host %q: pull %w", a.Host, errs[0])
	}
	return fmt.Errorf("host %q: pull %w (and %d more files failed)", a.Host, errs[0], len(errs)-1)
}

// reserved counts, per Agent, the bytes of Pulls under way, so that
// concurrent Pulls cannot together pass the cap.
var reserved sync.Map // *Agent -> *atomic.Int64

// reserve books total bytes against the host's cap, or refuses the whole
// listing naming its biggest file.
func (a *Agent) reserve(files []proto.FileInfo, total, max int64) (release func(), err error) {
	if max == 0 {
		max = DefaultMaxPullBytes
	}
	v, _ := reserved.LoadOrStore(a, new(atomic.Int64))
	r := v.(*atomic.Int64)
	for {
		cur := r.Load()
		already := a.pulled.Load() + cur
		if max > 0 && (total > max || already+total > max) {
			big := files[0]
			for _, f := range files {
				if f.Size > big.Size {
					big = f
				}
			}
			return nil, fmt.Errorf("host %q: refusing to pull %d files of %s with %s already pulled: over the cap of %s per host (PullOptions.MaxBytes); the largest is %s: the agent listed %d bytes",
				a.Host, len(files), human(total), human(already), human(max), truncate(big.Path, 200), big.Size)
		}
		if r.CompareAndSwap(cur, cur+total) {
			return func() { r.Add(-total) }, nil
		}
	}
}

// freeBytes is the space left to an unprivileged writer in dir's file
// system (a variable for tests).
var freeBytes = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// diskBooks hold, per file system (its device), the bytes Pulls in this
// process have booked and not yet written: hosts pull at once into one run
// directory, so each checks the free space less what the others will
// still write, and three hosts that each fit cannot together fill it
// (ENOSPC mid-copy).
var diskBooks = struct {
	sync.Mutex
	m map[uint64]*diskBook
}{m: map[uint64]*diskBook{}}

type diskBook struct {
	owed  int64            // booked, not yet written, all hosts
	hosts map[string]int64 // the same, by host
}

// diskShare is one Pull's booking.
type diskShare struct {
	b          *diskBook
	host       string
	left       int64 // booked and not yet written
	sync.Mutex       // left
}

// land notes n bytes written: the file system's free space shows them now.
func (d *diskShare) land(n int64) {
	d.Lock()
	n = min(n, d.left)
	d.left -= n
	d.Unlock()
	diskBooks.Lock()
	d.b.owed -= n
	d.b.hosts[d.host] -= n
	diskBooks.Unlock()
}

func (d *diskShare) release() {
	d.Lock()
	n := d.left
	d.left = 0
	d.Unlock()
	diskBooks.Lock()
	d.b.owed -= n
	if d.b.hosts[d.host] -= n; d.b.hosts[d.host] <= 0 {
		delete(d.b.hosts, d.host)
	}
	diskBooks.Unlock()
}

// reserveDisk books need bytes on dstDir's file system, or refuses the
// pull, with the numbers, when they do not fit beside what other hosts'
// pulls still have to write there.
func reserveDisk(dstDir string, need int64, n int, host string) (*diskShare, error) {
	dir := dstDir
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("host %q: pull: file system of %s: %w", host, dir, err)
	}
	diskBooks.Lock()
	defer diskBooks.Unlock()
	b := diskBooks.m[uint64(st.Dev)]
	if b == nil {
		b = &diskBook{hosts: map[string]int64{}}
		diskBooks.m[uint64(st.Dev)] = b
	}
	free, err := freeBytes(dir)
	if err != nil {
		return nil, fmt.Errorf("host %q: pull: free space of %s: %w", host, dir, err)
	}
	if free > math.MaxInt64 {
		free = math.MaxInt64
	}
	if need > int64(free)-b.owed {
		msg := fmt.Sprintf("host %q: refusing to pull %d files of %s into %s: its file system has only %s free", host, n, human(need), dstDir, human(int64(free)))
		if b.owed > 0 {
			others := slices.Sorted(maps.Keys(b.hosts))
			msg += fmt.Sprintf(", and %s of that is still to come from %s %s pulling at the same time (all together %s)", human(b.owed), plural(len(others), "host", "hosts"), strings.Join(quoteAll(others), ", "), human(need+b.owed))
		}
		return nil, errors.New(msg)
	}
	b.owed += need
	b.hosts[host] += need
	return &diskShare{b: b, host: host, left: need}, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}

func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", float64(n)/float64(div), "KMGTP"[exp], n)
}

// ConfinedPath returns where a host-reported path lands under dstDir, or an
// error when it would land anywhere else.
func ConfinedPath(dstDir, p string) (string, error) {
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("refusing path %q from the host: not a local relative path", p)
	}
	dst := filepath.Join(dstDir, p)
	rel, err := filepath.Rel(dstDir, dst)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("refusing path %q from the host: it leaves %s", p, dstDir)
	}
	return dst, nil
}

// dests makes the folders files land in, checking each folder once.
type dests struct {
	root   string
	filter func(path string, w io.Writer) io.WriteCloser
	name   func(path string) string // PullOptions.Name
	mu     sync.Mutex
	ok     map[string]bool
}

// sink is where file rel's bytes go: its .part file lf, through the
// pull's filter when it has one; done flushes the filter.
func (d *dests) sink(rel string, lf io.Writer) (w io.Writer, done func() error) {
	if d.filter != nil {
		if fw := d.filter(rel, lf); fw != nil {
			return fw, fw.Close
		}
	}
	return lf, func() error { return nil }
}

// localName is where path lands by name (PullOptions.Name).
func localName(name func(string) string, path string) string {
	if name == nil {
		return path
	}
	return name(path)
}

func newDests(root string) *dests { return &dests{root: root, ok: map[string]bool{}} }

// prepare returns where a (confined) path lands, its folder made, after
// refusing a local symlink planted where a folder should be.
func (d *dests) prepare(p string) (string, error) {
	dst, err := ConfinedPath(d.root, localName(d.name, p))
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(dst)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ok[dir] {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if rp, err := filepath.EvalSymlinks(dir); err == nil {
		if base, err := filepath.EvalSymlinks(d.root); err == nil {
			if rel, err := filepath.Rel(base, rp); err != nil || !(rel == "." || filepath.IsLocal(rel)) {
				return "", fmt.Errorf("%s: destination %s leaves %s", p, dst, d.root)
			}
		}
	}
	d.ok[dir] = true
	return dst, nil
}

// createPart creates a .part file, never through a symlink.
func createPart(p string) (*os.File, error) {
	return rundir.CreateRaw(p)
}

// sortedBySize returns files biggest first (big files start early).
func sortedBySize(files []proto.FileInfo) []proto.FileInfo {
	s := append([]proto.FileInfo(nil), files...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Size > s[j].Size })
	return s
}
