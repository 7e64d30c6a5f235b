package proto

import (
	"bytes"
	"strconv"
)

// ParseStatStartTicks returns a process's start time, field 22
// (starttime) of /proc/<pid>/stat, for ProcIdentity. The command name
// (field 2) may hold spaces and parentheses, so fields are counted after
// the last ')'.
func ParseStatStartTicks(stat []byte) (uint64, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state): field 22 is f[19].
	if len(f) < 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	return n, true
}
