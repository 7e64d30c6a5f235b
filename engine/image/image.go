// Package image builds and caches the Debian VM image that rlab boots for
// local `vm {}` hosts: a raw ext4 root file system with rdma-core, perftest,
// tcpdump and sshd, plus the kernel and initrd taken out of it. Images are
// cached under $RLAB_CACHE named by the hash of their recipe and rebuilt only
// when the recipe changes. The image carries no SSH host key: each VM gets
// one from rlab at boot through QEMU fw_cfg (see guest.go).
//
// Building runs mmdebstrap and mke2fs as root. This package must not import
// engine/vm or anything that talks to hosts (internal/archtest checks it).
package image

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rlab-dev/rlab/kinds"
)

// recipeVersion is bumped when the build steps change in a way the recipe
// fields don't show.
const recipeVersion = 1

// DefaultRelease is the Debian release built when none is asked for.
const DefaultRelease = "bookworm"

// DefaultPackages is the package list of the image (variant minbase plus
// these): the system's own, then the Debian package of every program the
// tool descriptor (kinds) names, so every tool rlab runs is there.
//
// A function, not a variable set at start-up: the tool families register
// after package initialisation (kinds/builtin).
func DefaultPackages() []string {
	return withToolPackages(append([]string{
		"systemd-sysv", "udev", "dbus", "kmod", "iproute2", "iputils-ping", "procps", "less", "ethtool",
		"openssh-server",
		"linux-image-amd64", "initramfs-tools", "zstd",
		"rdma-core", "ibverbs-providers", "infiniband-diags",
	}, programBuildPackages...))
}

// programBuildPackages build the example verbs programs of labs/programs
// on the host (issue 23: a lab ships its own C sources and builds them
// there). The program family (kinds/program) declares the compiler every
// host of a program workload needs; a lab's own libraries come from its
// program block's packages (provisioning). The full image carries these so
// the example labs build on it without provisioning.
var programBuildPackages = []string{"make", "libc6-dev", "libibverbs-dev", "librdmacm-dev"}

// withToolPackages appends the Debian package of each program of the tool
// descriptor that base lacks.
func withToolPackages(base []string) []string {
	have := map[string]bool{}
	for _, p := range base {
		have[p] = true
	}
	kinds.MustBeRegistered("engine/image: the image's tool packages")
	for _, prog := range kinds.Programs() {
		if p := prog.Packages.Debian; p != "" && !have[p] {
			have[p] = true
			base = append(base, p)
		}
	}
	return base
}

// Recipe is everything an image is made from. Its Hash names the cached image.
type Recipe struct {
	Release   string   // Debian suite, e.g. "bookworm"
	Variant   string   // "" = the full image; VariantMinimal
	Mirror    string   // "" = the build machine's apt sources
	Packages  []string // installed on top of variant minbase
	SizeBytes int64    // ext4 file system size (sparse)
	// SIWSource is the Debian package of the kernel's source from which
	// the soft-iWARP module is built ("" = no siw): Debian's kernels are
	// built without CONFIG_RDMA_SIW (bookworm's 6.1 and its backports'
	// 6.12 ship no siw.ko; checked in the packages), so the image builds
	// drivers/infiniband/sw/siw of the very kernel it runs, from that
	// release's own linux-source package, against its linux-headers, and
	// removes the compiler and sources afterwards.
	SIWSource string
	// Files are written into the image beside guestFiles (and over them):
	// what one variant needs and the others must not change for.
	Files []guestFile
}

// siwSources is the kernel source package of each release whose kernel
// lacks siw.
var siwSources = map[string]string{"bookworm": "linux-source-6.1"}

// DefaultRecipe returns the recipe for release ("" = DefaultRelease).
func DefaultRecipe(release string) Recipe {
	if release == "" {
		release = DefaultRelease
	}
	return Recipe{Release: release, Packages: DefaultPackages(), SizeBytes: 2 << 30, SIWSource: siwSources[release]}
}

// VariantMinimal names the minimal image: what boots, sshd and sudo,
// and none of the RDMA tools, so a lab on it shows what provisioning a
// stock host does (`vm { image = "minimal" }`).
const VariantMinimal = "minimal"

// MinimalPackages is the minimal image's list on top of variant minbase:
// the kernel (Debian's, whose rdma_rxe and sch_netem are in linux-image),
// systemd (systemd-networkd configures the NICs), kmod for the fw_cfg
// module, sshd and sudo. Not iproute2: minbase has none (a stock cloud
// image has it; here provisioning installs it for the rdma tool), nor
// rdma-core, perftest, ibverbs-utils, rdmacm-utils or tcpdump.
var MinimalPackages = []string{
	"systemd-sysv", "udev", "dbus", "kmod",
	"openssh-server", "sudo",
	"linux-image-amd64", "initramfs-tools", "zstd",
}

// minimalFiles: slirp's DNS forwarder, which the guest can reach once its
// lab asks for `internet = true` (the full image keeps the resolv.conf of
// the machine that built it, which holds up only where that resolver is
// reachable, and must not change: its hash).
var minimalFiles = []guestFile{
	{"/etc/resolv.conf", 0o644, "nameserver 10.0.2.3\n"},
}

// MinimalRecipe returns the minimal image's recipe for release ("" =
// DefaultRelease): no siw build.
func MinimalRecipe(release string) Recipe {
	if release == "" {
		release = DefaultRelease
	}
	return Recipe{Release: release, Variant: VariantMinimal, Packages: append([]string(nil), MinimalPackages...),
		SizeBytes: 2 << 30, Files: append([]guestFile(nil), minimalFiles...)}
}

// RecipeFor returns the recipe an image name stands for, as a lab's
// `vm { image = NAME }` and `rlab image build --image NAME` write it: ""
// or a Debian release ("bookworm") is the full image of that release;
// "minimal" or "<release>-minimal" ("bookworm-minimal") the minimal one.
func RecipeFor(name string) Recipe {
	if name == VariantMinimal {
		return MinimalRecipe("")
	}
	if rel, ok := strings.CutSuffix(name, "-"+VariantMinimal); ok && rel != "" {
		return MinimalRecipe(rel)
	}
	return DefaultRecipe(name)
}

// siwBuildPackages are installed for the siw build and purged after it.
func (r Recipe) siwBuildPackages() []string {
	if r.SIWSource == "" {
		return nil
	}
	return []string{r.SIWSource, "linux-headers-amd64", "make", "xz-utils"}
}

// siwPurge is what the siw hook purges besides the kernel's source and
// headers: make, unless the image asks for it (programBuildPackages).
func (r Recipe) siwPurge() string {
	for _, p := range r.Packages {
		if p == "make" {
			return ""
		}
	}
	return "make"
}

// siwHook is the mmdebstrap customize hook that builds siw.ko in the new
// root ($1) for its kernel, installs it under updates/ (so modprobe siw
// finds it) and purges what the build needed. Every command is the
// release's own: its tar, kbuild, gcc and depmod, run chrooted.
const siwHook = `set -eu
root="$1"; src="$2"; purge="${3:-}"
kver=$(ls "$root/lib/modules" | head -n 1)
chroot "$root" sh -euc '
kver="$1"; src="$2"; purge="$3"
mkdir -p /tmp/siw-build && cd /tmp/siw-build
tar -xf /usr/src/"$src".tar.xz --wildcards "$src/drivers/infiniband/sw/siw/*" "$src/include/uapi/rdma/siw-abi.h"
make -C /lib/modules/"$kver"/build M=/tmp/siw-build/"$src"/drivers/infiniband/sw/siw CONFIG_RDMA_SIW=m KCFLAGS=-I/tmp/siw-build/"$src"/include/uapi -j2 modules
install -D -m 0644 /tmp/siw-build/"$src"/drivers/infiniband/sw/siw/siw.ko /lib/modules/"$kver"/updates/siw.ko
depmod -a "$kver"
cd / && rm -rf /tmp/siw-build
apt-get purge -y --autoremove "$src" linux-headers-amd64 $(dpkg-query -W -f="\${Package}\n" "linux-headers-*" "linux-kbuild-*" 2>/dev/null) $purge
' sh "$kver" "$src" "$purge"
`

// Hash identifies the recipe: the fields, the guest files and the build
// version. 16 hex digits.
func (r Recipe) Hash() string {
	h := sha256.New()
	fmt.Fprintf(h, "v%d\nrelease=%s\nmirror=%s\nsize=%d\n", recipeVersion, r.Release, r.Mirror, r.SizeBytes)
	// Written only when set: the full image's hash (its cached build took
	// 12 minutes, siw included) stays what it was before variants.
	if r.Variant != "" {
		fmt.Fprintf(h, "variant=%s\n", r.Variant)
	}
	pk := append([]string(nil), r.Packages...)
	sort.Strings(pk)
	fmt.Fprintf(h, "packages=%s\n", strings.Join(pk, ","))
	if r.SIWSource != "" {
		fmt.Fprintf(h, "siw=%s\n%s\n", r.SIWSource, siwHook)
	}
	for _, f := range guestFiles {
		fmt.Fprintf(h, "file %s %o %d\n%s\n", f.path, f.mode, len(f.content), f.content)
	}
	for _, l := range guestLinks {
		fmt.Fprintf(h, "link %s %s\n", l[0], l[1])
	}
	for _, f := range r.Files {
		fmt.Fprintf(h, "variant file %s %o %d\n%s\n", f.path, f.mode, len(f.content), f.content)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Name is the folder name of the recipe's image in the cache:
// debian-<release>-<hash>, debian-<release>-minimal-<hash>.
func (r Recipe) Name() string {
	if r.Variant != "" {
		return "debian-" + r.Release + "-" + r.Variant + "-" + r.Hash()
	}
	return "debian-" + r.Release + "-" + r.Hash()
}

// Image is a built image on disk.
type Image struct {
	// Paths are derived from where the image is found, not stored.
	Dir       string            `json:"-"`
	Root      string            `json:"-"` // raw ext4 root file system
	Kernel    string            `json:"-"` // vmlinuz
	Initrd    string            `json:"-"`
	Hash      string            `json:"hash"`
	Release   string            `json:"release"`
	Packages  map[string]string `json:"packages"` // installed versions of the recipe's packages
	Kver      string            `json:"kernel_version"`
	RootBytes int64             `json:"root_bytes"`      // allocated (the file is sparse)
	Apparent  int64             `json:"root_size_bytes"` // apparent size
	BuildTime time.Duration     `json:"build_time_ns"`
	BuiltAt   time.Time         `json:"built_at"`
	Cached    bool              `json:"-"` // found in the cache, not built now
}

// Bytes is the disk space the image takes (root allocated + kernel + initrd).
func (im *Image) Bytes() int64 {
	n := im.RootBytes
	for _, p := range []string{im.Kernel, im.Initrd} {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n
}

const (
	manifestName = "image.json"
	rootName     = "root.ext4"
	kernelName   = "vmlinuz"
	initrdName   = "initrd.img"
)

// CacheDir returns $RLAB_CACHE, or /var/tmp/rlab-cache.
func CacheDir() string {
	if d := os.Getenv("RLAB_CACHE"); d != "" {
		return d
	}
	return "/var/tmp/rlab-cache"
}

// CheckCacheDir refuses an image cache another user could change: the
// default, /var/tmp/rlab-cache, is a fixed name in a folder everyone may
// write, so another local user may have made it first (or a symlink by
// that name) and put a kernel and root file system of theirs there for
// rlab to boot, or a symlink for root's build to create or remove files
// through. The folder (and a symlink naming it) must belong to this user
// or to root and be writable by no one else. A cache that does not exist
// yet is fine: the caller makes it, then checks again.
func CheckCacheDir(dir string) error {
	li, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("image cache %s: %w", dir, err)
	}
	me := os.Geteuid()
	owner := func(fi fs.FileInfo) int {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return int(st.Uid)
		}
		return -1
	}
	fix := "remove it (or set RLAB_CACHE to a folder of yours)"
	if li.Mode()&fs.ModeSymlink != 0 {
		if u := owner(li); u != me && u != 0 {
			return fmt.Errorf("image cache %s is a symlink made by uid %d, neither you nor root: another user chooses where rlab reads and writes images; %s", dir, u, fix)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("image cache %s: %w", dir, err)
	}
	switch u := owner(fi); {
	case !fi.IsDir():
		return fmt.Errorf("image cache %s is not a folder", dir)
	case u != me && u != 0:
		return fmt.Errorf("image cache %s belongs to uid %d, neither you nor root: that user could replace the images rlab boots; %s", dir, u, fix)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("image cache %s is writable by other users (mode %#o): they could replace the images rlab boots; chmod go-w it, or %s", dir, fi.Mode().Perm(), fix)
	}
	return nil
}

// Lookup returns the cached image of r under dir, if it is complete and
// the cache is not another user's to change (CheckCacheDir).
func Lookup(dir string, r Recipe) (*Image, error) {
	if err := CheckCacheDir(dir); err != nil {
		return nil, err
	}
	d := filepath.Join(dir, r.Name())
	b, err := os.ReadFile(filepath.Join(d, manifestName))
	if err != nil {
		return nil, err
	}
	var im Image
	if err := json.Unmarshal(b, &im); err != nil {
		return nil, fmt.Errorf("read image manifest %s: %w", filepath.Join(d, manifestName), err)
	}
	// The folder may have moved since it was built.
	im.Dir, im.Root, im.Kernel, im.Initrd = d, filepath.Join(d, rootName), filepath.Join(d, kernelName), filepath.Join(d, initrdName)
	for _, p := range []string{im.Root, im.Kernel, im.Initrd} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("cached image %s is incomplete: %w", d, err)
		}
	}
	im.Cached = true
	return &im, nil
}

// Stage names reported to Options.Progress, in order.
var Stages = []string{"bootstrap", "configure", "kernel", "filesystem"}

// Options tune Build.
type Options struct {
	Dir   string    // cache folder; "" = CacheDir()
	Force bool      // rebuild even when cached
	Log   io.Writer // mmdebstrap and mke2fs output; nil = discarded (kept in build.log either way)
	// Progress is called when a stage starts (index into Stages) and for
	// every output line of the current stage (line != "").
	Progress func(stage int, line string)
}

// Ensure returns the cached image of r, building it first when it is
// missing (or when opts.Force).
func Ensure(ctx context.Context, r Recipe, opts Options) (*Image, error) {
	if opts.Dir == "" {
		opts.Dir = CacheDir()
	}
	if !opts.Force {
		if im, err := Lookup(opts.Dir, r); err == nil {
			return im, nil
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("build image %s: %w", r.Name(), err)
	}
	if err := CheckCacheDir(opts.Dir); err != nil {
		return nil, fmt.Errorf("build image %s: %w", r.Name(), err)
	}
	// One build per recipe at a time; a second caller waits and then finds it.
	lock, err := lockFile(ctx, filepath.Join(opts.Dir, "."+r.Name()+".lock"), true)
	if err != nil {
		return nil, fmt.Errorf("build image %s: wait for another build: %w", r.Name(), err)
	}
	defer lock.Close()
	if !opts.Force {
		if im, err := Lookup(opts.Dir, r); err == nil {
			return im, nil
		}
	}
	return build(ctx, r, opts)
}

// lockFile locks path (a build's .NAME.lock, made when missing)
// exclusively, waiting for it until ctx ends when wait, else failing with
// EWOULDBLOCK, and returns it once the file it holds is still the one path
// names: prune unlinks the lock file while it holds it, so a builder that
// opened the file before the unlink and locked it after would hold a file
// no later builder opens, and two builds of one image would run at once.
// The check after locking is engine/vm's lockPath's (SECURITY 170).
func lockFile(ctx context.Context, path string, wait bool) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if lockOpened != nil {
			lockOpened(path)
		}
		if err := flock(ctx, f, wait); err != nil {
			f.Close()
			return nil, err
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return f, nil
		}
		f.Close()
		if err1 != nil {
			return nil, err1
		}
		if err2 != nil && !errors.Is(err2, fs.ErrNotExist) {
			return nil, err2
		}
	}
}

// lockOpened, when set (tests), runs between lockFile's open and its lock:
// where a prune may unlink the file.
var lockOpened func(path string)

func flock(ctx context.Context, f *os.File, wait bool) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || !wait {
			return err
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func build(ctx context.Context, r Recipe, opts Options) (*Image, error) {
	t0 := time.Now()
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("build image %s: must run as root (mmdebstrap and mke2fs create device nodes and owned files)", r.Name())
	}
	for _, tool := range []string{"mmdebstrap", "mke2fs"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("build image %s: %s not found (apt-get install mmdebstrap e2fsprogs): %w", r.Name(), tool, err)
		}
	}
	final := filepath.Join(opts.Dir, r.Name())
	tmp := filepath.Join(opts.Dir, fmt.Sprintf(".build-%s-%d", r.Name(), os.Getpid()))
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("build image %s: %w", r.Name(), err)
	}
	defer os.RemoveAll(tmp)
	logf, err := os.Create(filepath.Join(tmp, "build.log"))
	if err != nil {
		return nil, fmt.Errorf("build image %s: %w", r.Name(), err)
	}
	defer logf.Close()
	var out io.Writer = logf
	if opts.Log != nil {
		out = io.MultiWriter(logf, opts.Log)
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(int, string) {}
	}
	b := &builder{r: r, tmp: tmp, rootfs: filepath.Join(tmp, "rootfs"), out: out, progress: progress}

	progress(0, "")
	if err := b.bootstrap(ctx); err != nil {
		return nil, b.fail("bootstrap", err)
	}
	progress(1, "")
	if err := b.configure(ctx); err != nil {
		return nil, b.fail("configure guest", err)
	}
	progress(2, "")
	kver, err := b.kernel()
	if err != nil {
		return nil, b.fail("copy kernel", err)
	}
	versions, err := installedVersions(filepath.Join(b.rootfs, "var/lib/dpkg/status"), r.Packages)
	if err != nil {
		return nil, b.fail("read package versions", err)
	}
	progress(3, "")
	if err := b.mkfs(ctx); err != nil {
		return nil, b.fail("make file system", err)
	}
	if err := os.RemoveAll(b.rootfs); err != nil {
		return nil, b.fail("remove rootfs", err)
	}
	st, err := os.Stat(filepath.Join(tmp, rootName))
	if err != nil {
		return nil, b.fail("stat image", err)
	}
	im := &Image{
		Hash: r.Hash(), Release: r.Release, Packages: versions, Kver: kver,
		Apparent: st.Size(), BuildTime: time.Since(t0), BuiltAt: time.Now().UTC(),
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		im.RootBytes = sys.Blocks * 512
	}
	mb, _ := json.MarshalIndent(im, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, manifestName), append(mb, '\n'), 0o644); err != nil {
		return nil, b.fail("write manifest", err)
	}
	logf.Close()
	if err := os.RemoveAll(final); err != nil {
		return nil, b.fail("replace old image", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, b.fail("move image into the cache", err)
	}
	im, err = Lookup(opts.Dir, r)
	if err != nil {
		return nil, err
	}
	im.Cached = false
	return im, nil
}

type builder struct {
	r        Recipe
	tmp      string
	rootfs   string
	out      io.Writer
	progress func(int, string)
	tail     []string // last output lines, for errors
}

func (b *builder) fail(step string, err error) error {
	msg := fmt.Sprintf("build image %s: %s: %v", b.r.Name(), step, err)
	if len(b.tail) > 0 {
		msg += "\n" + strings.Join(b.tail, "\n")
	}
	return errors.New(msg)
}

// run runs argv, streaming its output lines to the log and progress.
func (b *builder) run(ctx context.Context, stage int, argv ...string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C.UTF-8", "RLAB_SIW_HOOK="+siwHook, "RLAB_SIW_SOURCE="+b.r.SIWSource, "RLAB_SIW_PURGE="+b.r.siwPurge())
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	b.tail = nil
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(b.out, line)
			b.tail = append(b.tail, line)
			if len(b.tail) > 20 {
				b.tail = b.tail[1:]
			}
			b.progress(stage, line)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Wait()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("%s: %w", argv[0], err)
	}
	return nil
}

func (b *builder) bootstrap(ctx context.Context) error {
	include := append(append([]string(nil), b.r.Packages...), b.r.siwBuildPackages()...)
	argv := []string{"mmdebstrap", "--variant=minbase", "--mode=root", "--format=directory",
		"--include=" + strings.Join(include, ","),
		"--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-include=/usr/share/doc/*/copyright",
		"--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/locale/*",
		b.r.Release, b.rootfs}
	if b.r.SIWSource != "" {
		// mmdebstrap runs a hook as `sh -c HOOK exec ROOT`; the source
		// package's name comes through the environment, never the shell
		// text (it is the recipe's, not a user's, but argv stays argv).
		argv = append(argv[:len(argv)-2], "--customize-hook="+`sh -c "$RLAB_SIW_HOOK" siw-hook "$1" "$RLAB_SIW_SOURCE" "$RLAB_SIW_PURGE"`, b.r.Release, b.rootfs)
	}
	if b.r.Mirror != "" {
		argv = append(argv, b.r.Mirror)
	}
	return b.run(ctx, 0, argv...)
}

func (b *builder) configure(ctx context.Context) error {
	R := b.rootfs
	// No host key may be baked in: openssh-server's postinst made some.
	keys, _ := filepath.Glob(filepath.Join(R, "etc/ssh/ssh_host_*"))
	for _, k := range keys {
		if err := os.Remove(k); err != nil {
			return err
		}
	}
	_ = os.Remove(filepath.Join(R, "var/lib/dbus/machine-id"))
	for _, f := range guestFiles {
		p := filepath.Join(R, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		_ = os.Remove(p)
		if err := os.WriteFile(p, []byte(f.content), os.FileMode(f.mode)); err != nil {
			return err
		}
		if err := os.Chmod(p, os.FileMode(f.mode)); err != nil {
			return err
		}
	}
	for _, f := range b.r.Files {
		p := filepath.Join(R, f.path)
		_ = os.Remove(p)
		if err := os.WriteFile(p, []byte(f.content), os.FileMode(f.mode)); err != nil {
			return err
		}
		if err := os.Chmod(p, os.FileMode(f.mode)); err != nil {
			return err
		}
	}
	for _, l := range guestLinks {
		p := filepath.Join(R, l[0])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		_ = os.Remove(p)
		if err := os.Symlink(l[1], p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(R, "root/.ssh"), 0o700); err != nil {
		return err
	}
	// Root without a password: sshd refuses it (keys only), the serial
	// console accepts it, for debugging a VM that did not come up.
	if err := b.run(ctx, 1, "passwd", "-R", R, "-d", "root"); err != nil {
		return err
	}
	for _, pat := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*_Packages", "var/lib/apt/lists/*_Translation-*"} {
		m, _ := filepath.Glob(filepath.Join(R, pat))
		for _, p := range m {
			_ = os.Remove(p)
		}
	}
	return nil
}

// kernel copies vmlinuz and the initrd out of the rootfs and checks that the
// kernel has rdma_rxe and sch_netem. It returns the kernel version.
func (b *builder) kernel() (string, error) {
	mods, _ := filepath.Glob(filepath.Join(b.rootfs, "lib/modules/*/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*"))
	if len(mods) == 0 {
		return "", errors.New("the installed kernel has no rdma_rxe module")
	}
	if b.r.SIWSource != "" {
		if siw, _ := filepath.Glob(filepath.Join(b.rootfs, "lib/modules/*/updates/siw.ko")); len(siw) == 0 {
			return "", errors.New("the siw module was not built (see the customize hook's output in build.log)")
		}
	}
	rel, _ := filepath.Rel(filepath.Join(b.rootfs, "lib/modules"), mods[0])
	kver := strings.SplitN(rel, string(filepath.Separator), 2)[0]
	// impair blocks put netem on the data NICs; the agent loads it.
	if m, _ := filepath.Glob(filepath.Join(b.rootfs, "lib/modules", kver, "kernel/net/sched/sch_netem.ko*")); len(m) == 0 {
		return "", errors.New("the installed kernel has no sch_netem module (impair blocks need it)")
	}
	for src, dst := range map[string]string{"boot/vmlinuz-" + kver: kernelName, "boot/initrd.img-" + kver: initrdName} {
		if err := copyFile(filepath.Join(b.rootfs, src), filepath.Join(b.tmp, dst)); err != nil {
			return "", err
		}
	}
	return kver, nil
}

func (b *builder) mkfs(ctx context.Context) error {
	return b.run(ctx, 3, "mke2fs", "-q", "-F", "-t", "ext4", "-L", "rlabroot", "-d", b.rootfs,
		filepath.Join(b.tmp, rootName), fmt.Sprintf("%dk", b.r.SizeBytes/1024))
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// installedVersions reads a dpkg status file and returns the installed
// version of each package in names.
func installedVersions(statusFile string, names []string) (map[string]string, error) {
	f, err := os.Open(statusFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseDpkgStatus(f, names)
}

// parseDpkgStatus returns package -> version for the installed packages of
// names found in a dpkg status stream.
func parseDpkgStatus(r io.Reader, names []string) (map[string]string, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]string{}
	var pkg, ver, status string
	flush := func() {
		if pkg != "" && want[pkg] && strings.HasSuffix(status, " installed") && ver != "" {
			out[pkg] = ver
		}
		pkg, ver, status = "", "", ""
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Package":
			pkg = v
		case "Version":
			ver = v
		case "Status":
			status = v
		}
	}
	flush()
	return out, sc.Err()
}
