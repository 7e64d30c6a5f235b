package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The tool-version cache. Asking rdma, perftest, tcpdump and modprobe their
// versions is five fork+execs: the largest part of a warm facts call on a
// small host (measured in BENCHMARKS.md, "Facts"). A tool's answer depends
// only on its binary (the versions parsed are compiled into it), so the
// answer is kept next to the installed agent, keyed so it cannot be wrong:
//
//   - per file: the tool's absolute path, device, inode, size, mtime and
//     ctime (a package upgrade renames a new file in: new inode and ctime;
//     an in-place rewrite changes mtime/ctime/size);
//   - per cache file: the host's /etc/machine-id and boot id (homes may be
//     shared between hosts, NFS-style; a reboot may have changed the tools
//     under a mount), the agent build (the cache lives in the agent's own
//     per-hash directory) and the effective uid (in the file name, so a
//     become agent running as root never reads what the user could write).
//
// The file is written atomically (temp + rename), 0600, and ignored when it
// is not a regular file (symlinks refused), not owned by the effective uid,
// group/world writable, unreadable or corrupt. Only answers that came back
// in time are kept. facts with Refresh asks every tool again and rewrites it.

// toolsCacheVersion is bumped when the file's meaning changes.
const toolsCacheVersion = 1

// toolsCacheMax bounds what is read: a real file is a few KiB.
const toolsCacheMax = 256 << 10

// toolsCache is the file's content.
type toolsCache struct {
	Version   int                   `json:"version"`
	MachineID string                `json:"machine_id"`
	BootID    string                `json:"boot_id"`
	Entries   map[string]cacheEntry `json:"entries"` // cacheKey(path, args) -> entry
}

// cacheEntry is one tool invocation's parsed answer and the identity of
// the binary that gave it.
type cacheEntry struct {
	fileID
	Value string `json:"value"`
}

// fileID is what must be unchanged for a cached answer to stand.
type fileID struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
	Ctime int64  `json:"ctime_ns"`
}

// statFileID stats path (following symlinks, as exec does).
func statFileID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{
		Dev:   uint64(st.Dev), //nolint:unconvert // Dev's type differs by arch
		Ino:   st.Ino,
		Size:  st.Size,
		Mtime: st.Mtim.Nano(),
		Ctime: st.Ctim.Nano(),
	}, nil
}

func cacheKey(path string, args []string) string {
	return path + "\x00" + strings.Join(args, "\x00")
}

// hostIdentity is the machine and boot a cache file belongs to.
type hostIdentity struct{ machineID, bootID string }

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Where the host's identity is read. Variables so tests can fake another
// machine.
var (
	machineIDPath = "/etc/machine-id"
	bootIDPath    = "/proc/sys/kernel/random/boot_id"
)

// readHostIdentity reads the machine id (32 hex digits) and the boot id
// (a UUID). Without both there is no cache: it could not be told apart from
// another host's.
func readHostIdentity() (hostIdentity, error) {
	m := readSysfs(machineIDPath)
	if !hexID.MatchString(m) {
		return hostIdentity{}, fmt.Errorf("read machine id %s: not 32 hex digits: %q", machineIDPath, truncateStr(m, 40))
	}
	b := readSysfs(bootIDPath)
	if !hexID.MatchString(strings.ReplaceAll(b, "-", "")) {
		return hostIdentity{}, fmt.Errorf("read boot id %s: not a UUID: %q", bootIDPath, truncateStr(b, 40))
	}
	return hostIdentity{m, b}, nil
}

func truncateStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// toolsCachePath is the cache file for this machine and effective uid in
// dir.
func toolsCachePath(dir string, id hostIdentity) string {
	return filepath.Join(dir, "tools-"+strconv.Itoa(os.Geteuid())+"-"+id.machineID+".json")
}

// parseToolsCache decodes a cache file. It fails on anything that is not a
// cache of this version.
func parseToolsCache(b []byte) (toolsCache, error) {
	var c toolsCache
	if len(b) > toolsCacheMax {
		return c, fmt.Errorf("tools cache is %d bytes, more than %d", len(b), toolsCacheMax)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return toolsCache{}, fmt.Errorf("decode tools cache: %w", err)
	}
	if c.Version != toolsCacheVersion {
		return toolsCache{}, fmt.Errorf("tools cache version %d, want %d", c.Version, toolsCacheVersion)
	}
	if c.Entries == nil {
		c.Entries = map[string]cacheEntry{}
	}
	return c, nil
}

// errCacheUntrusted is wrapped when a cache file exists but is not one we
// may believe.
var errCacheUntrusted = errors.New("tools cache not trusted")

// loadToolsCache reads the cache file for id, refusing symlinks, files of
// another owner, group/world-writable files and corrupt content.
func loadToolsCache(path string, id hostIdentity) (toolsCache, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return toolsCache{}, fmt.Errorf("%w: %s is a symlink", errCacheUntrusted, path)
		}
		return toolsCache{}, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return toolsCache{}, fmt.Errorf("stat %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return toolsCache{}, fmt.Errorf("%w: %s is not a regular file", errCacheUntrusted, path)
	case int(st.Uid) != os.Geteuid():
		return toolsCache{}, fmt.Errorf("%w: %s is owned by uid %d, not %d", errCacheUntrusted, path, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		return toolsCache{}, fmt.Errorf("%w: %s is writable by others (mode %o)", errCacheUntrusted, path, st.Mode&0o777)
	}
	b, err := io.ReadAll(io.LimitReader(f, toolsCacheMax+1))
	if err != nil {
		return toolsCache{}, fmt.Errorf("read %s: %w", path, err)
	}
	c, err := parseToolsCache(b)
	if err != nil {
		return toolsCache{}, fmt.Errorf("%s: %w", path, err)
	}
	if c.MachineID != id.machineID || c.BootID != id.bootID {
		return toolsCache{}, fmt.Errorf("%w: %s belongs to machine %q boot %q", errCacheUntrusted, path, c.MachineID, c.BootID)
	}
	return c, nil
}

// saveToolsCache writes c to path atomically (temp file in the same dir,
// 0600, rename). The folder is opened without following a symlink and the
// file made and renamed in it by that handle: a root agent under become
// runs from the user's agent folder, which the user could swap for a
// symlink to /etc between two path lookups.
func saveToolsCache(path string, c toolsCache) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode tools cache: %w", err)
	}
	dir, base := filepath.Dir(path), filepath.Base(path)
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("write tools cache %s: open folder: %w", path, err)
	}
	defer unix.Close(dfd)
	var fd int
	var name string
	for i := 0; ; i++ {
		name = ".tools-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano()+int64(i), 36) + ".tmp"
		fd, err = unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil || !errors.Is(err, unix.EEXIST) || i == 100 {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write tools cache %s: %w", filepath.Join(dir, name), err)
	}
	tmp := os.NewFile(uintptr(fd), filepath.Join(dir, name))
	_, werr := tmp.Write(b)
	// O_CREAT's mode is cut by the umask; say 0600 whatever it is.
	merr := tmp.Chmod(0o600)
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		unix.Unlinkat(dfd, name, 0)
		return fmt.Errorf("write tools cache %s: %w", tmp.Name(), err)
	}
	if err := unix.Renameat(dfd, name, dfd, base); err != nil {
		unix.Unlinkat(dfd, name, 0)
		return fmt.Errorf("rename tools cache into %s: %w", path, err)
	}
	return nil
}

// agentCacheDir is where the installed agent keeps its tool-version cache:
// its own per-build directory, $HOME/.cache/rlab/agent/<hash>. An agent
// started from anywhere else (a test, a developer's build) keeps none.
// A variable so tests can point it at a temp dir.
var agentCacheDir = func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	dir := filepath.Dir(exe)
	if !strings.HasSuffix(filepath.Dir(dir), string(filepath.Separator)+filepath.Join(".cache", "rlab", "agent")) {
		return ""
	}
	return dir
}
