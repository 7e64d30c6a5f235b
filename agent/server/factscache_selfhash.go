package server

import (
	"os"
	"path/filepath"
	"strconv"
)

// selfHashKey is the one entry of a self-hash cache file.
const selfHashKey = "/proc/self/exe"

// SelfHashCached is SelfHash remembered in the installed agent's own
// directory, keyed like the tool-version cache (factscache.go): the running
// binary's device, inode, size, mtime and ctime, the machine and boot ids
// and the effective uid. Hashing the 4 MB agent is most of its start
// (about 7-10 ms of 11 ms on a busy 2-core host, BENCHMARKS.md "Hosts over
// SSH"), paid on every host of every command.
//
// It cannot report a hash the running binary does not have: a running
// executable cannot be opened for writing (ETXTBSY), a replacement is a new
// inode, and any later in-place write moves ctime, which no one can set
// back. Outside rlab's per-user agent cache (tests, a developer's build) it
// is SelfHash.
func SelfHashCached() (string, error) {
	dir := agentCacheDir()
	if dir == "" {
		return SelfHash()
	}
	id, err := readHostIdentity()
	if err != nil {
		return SelfHash()
	}
	// Stat before hashing, as for tools: a binary changed meanwhile leaves
	// an entry that is missed next time, never a wrong one.
	fid, statErr := statFileID(selfHashKey)
	path := filepath.Join(dir, "self-"+strconv.Itoa(os.Geteuid())+"-"+id.machineID+".json")
	if statErr == nil {
		if c, err := loadToolsCache(path, id); err == nil {
			if e, ok := c.Entries[selfHashKey]; ok && e.fileID == fid && len(e.Value) == 64 {
				return e.Value, nil
			}
		}
	}
	h, err := SelfHash()
	if err != nil || statErr != nil {
		return h, err
	}
	// Best effort: a cache that cannot be written costs only time.
	_ = saveToolsCache(path, toolsCache{Version: toolsCacheVersion, MachineID: id.machineID, BootID: id.bootID,
		Entries: map[string]cacheEntry{selfHashKey: {fileID: fid, Value: h}}})
	return h, nil
}
