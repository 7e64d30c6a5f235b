package proto

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Bound is the most one field of a host's answer may hold: for a string or
// []byte its bytes, for a slice or map its elements. Each is a size the
// real thing has (a kernel buffer, a path, a file name) or, where nothing
// outside rlab limits it, what the shipped agent ever sends, with room.
type Bound struct {
	// Max bounds the field: bytes of a string or []byte; elements of a
	// slice or map.
	Max int
	// Elem bounds each string element of a []string, or each key of a
	// map[string]T, in bytes (0 for other element kinds, whose own fields
	// have their bounds).
	Elem int
	// Cut: the field is text the user wants (why a fact or a cleanup
	// failed), so a string over its bound (or each element of a []string)
	// is cut to its first Max (Elem) bytes with a note of how long it was,
	// rather than the whole answer refused. Any other field over its bound
	// refuses the answer.
	Cut bool
	// Why says where the number comes from.
	Why string
}

// Sizes the kernel and the file system give.
const (
	utsLen     = 64   // __NEW_UTS_LEN: each utsname field (nodename, release, machine)
	ifNameLen  = 15   // IFNAMSIZ 16 with the NUL
	ibNameLen  = 64   // IB_DEVICE_NAME_MAX
	pathMax    = 4096 // PATH_MAX
	nameMax    = 255  // NAME_MAX: one file name
	guidLen    = 19   // sysfs node_guid: %04x:%04x:%04x:%04x
	gidLen     = 39   // an IPv6 address written whole: 8 groups of 4 hex digits
	maxErrText = 4096 // one error's text, as MaxErrorMessage
)

// Bounds holds the one bound of every string, slice and map field of every
// answer a host sends, by the Go name of the type that declares the field
// and the field's ("Facts.Hostname"). The controller checks each answer
// against it where it decodes one (agent/rpc: CheckBounds), so no field a
// run keeps, copies per workload or prints can be larger than this, however
// the host lies. agent/rpc TestEveryReplyFieldBounded fails on a field of
// a reply type (found from its method table) missing here, so a field added
// without a bound fails CI.
var Bounds = map[string]Bound{
	// The hello (rpc.ReadHello).
	"Hello.Magic":   {Max: 16, Why: `"rlab-agent"`},
	"Hello.Hash":    {Max: 64, Why: "a sha256 in hex"},
	"Hello.Version": {Max: 256, Why: "a build's version string (a tag and a commit)"},
	"Hello.WorkDir": {Max: pathMax, Why: "a path (PATH_MAX)"},
	// An error answer: cut by (*Error).Bounded, never refused.
	"Error.Code":    {Max: 64, Cut: true, Why: "a Code* constant; cut by Bounded"},
	"Error.Message": {Max: MaxErrorMessage, Cut: true, Why: "a sentence; cut by Bounded"},
	"Error.Command": {Max: MaxErrorCommand + 1, Elem: MaxErrorCommand, Cut: true, Why: "an argv of at most MaxErrorCommand bytes in all; cut by Bounded"},
	"Error.Stderr":  {Max: MaxErrorStderr, Cut: true, Why: "a stderr's tail; cut by Bounded"},

	"ProcIdentity.BootID": {Max: 36, Why: "/proc/sys/kernel/random/boot_id, a UUID"},

	// facts
	"Facts.Hostname":      {Max: utsLen, Why: "utsname's nodename (__NEW_UTS_LEN)"},
	"Facts.Kernel":        {Max: MaxKernel, Why: "utsname's release (uname -r)"},
	"Facts.OS":            {Max: 256, Why: "os-release's PRETTY_NAME: no limit there, real ones under 64"},
	"Facts.Arch":          {Max: utsLen, Why: "utsname's machine (uname -m)"},
	"Facts.User":          {Max: 256, Why: "a login name (LOGIN_NAME_MAX)"},
	"Facts.Netdevs":       {Max: 4096, Why: "network interfaces: hosts of containers have hundreds of veths"},
	"Facts.RDMA":          {Max: 1024, Why: "RDMA devices: an adapter with SR-IOV has a device per virtual function (127 per port)"},
	"Facts.RXEModule":     {Max: 16, Why: "loaded, builtin, loadable or absent"},
	"Facts.SIWModule":     {Max: 16, Why: "as rxe_module"},
	"Facts.NetemModule":   {Max: 16, Why: "as rxe_module, or unknown"},
	"Facts.Tools":         {Max: MaxTools, Elem: nameMax, Why: "the programs a request probes; each a file name (NAME_MAX)"},
	"Facts.PerftestFlags": {Max: 64, Elem: 64, Why: "the options a request asks about (Probe.HelpFlags), each an option's name"},
	"Facts.PackageDB":     {Max: 16, Why: "dpkg or rpm"},
	"Facts.Packages":      {Max: 4096, Elem: nameMax, Why: "the package names a request asks about (FactsParams.Packages)"},
	"Facts.WorkDir":       {Max: pathMax, Why: "a path (PATH_MAX)"},
	"Facts.ProcTracking":  {Max: 32, Why: "cgroup or process-group"},
	"Facts.Errors":        {Max: 2 * MaxTools, Elem: maxErrText, Cut: true, Why: "one per fact or tool that could not be read; each an error's text, cut (it says why a fact is missing)"},

	"Platform.Virtualization": {Max: 64, Why: "systemd-detect-virt's word (vm-other)"},
	"Platform.Vendor":         {Max: 256, Why: "a DMI (SMBIOS) string: no limit there, real ones under 64"},
	"Platform.Product":        {Max: 256, Why: "a DMI (SMBIOS) string"},
	"Platform.Version":        {Max: 256, Why: "a DMI (SMBIOS) string"},
	"Platform.CPUModel":       {Max: 256, Why: "cpuinfo's model name: x86's brand string is 48 bytes"},
	"Platform.DistroID":       {Max: 64, Why: "os-release's ID, one word"},
	"Platform.DistroIDLike":   {Max: 16, Elem: 64, Why: "os-release's ID_LIKE: a few IDs"},
	"Platform.DistroVersion":  {Max: 64, Why: "os-release's VERSION_ID"},
	"Platform.RDMACore":       {Max: 32, Why: "a release number from libibverbs' file name (44.0)"},

	"Netdev.Name":   {Max: MaxNetdevName, Why: "IFNAMSIZ"},
	"Netdev.State":  {Max: 16, Why: "operstate's word (lowerlayerdown)"},
	"Netdev.MAC":    {Max: 95, Why: "MAX_ADDR_LEN 32 bytes as xx:xx:…"},
	"Netdev.Driver": {Max: 64, Why: "a module's name (MODULE_NAME_LEN)"},
	"Netdev.PCIID":  {Max: 16, Why: "vendor:device, 9 bytes"},
	"Netdev.Addrs":  {Max: 1024, Elem: 64, Why: "addresses of one interface; each an IPv6 address with its prefix (INET6_ADDRSTRLEN and /128)"},

	"RDMADevice.Name":         {Max: ibNameLen, Why: "IB_DEVICE_NAME_MAX"},
	"RDMADevice.Driver":       {Max: 16, Why: "rxe, siw or hw"},
	"RDMADevice.Parent":       {Max: ifNameLen, Why: "a netdev's name (IFNAMSIZ)"},
	"RDMADevice.NodeType":     {Max: 16, Why: "CA or RNIC"},
	"RDMADevice.Netdevs":      {Max: 256, Elem: ifNameLen, Why: "a device's netdevs (sysfs device/net); each IFNAMSIZ"},
	"RDMADevice.NodeGUID":     {Max: guidLen, Why: "sysfs node_guid"},
	"RDMADevice.SysImageGUID": {Max: guidLen, Why: "sysfs sys_image_guid"},
	"RDMADevice.Ports":        {Max: 256, Why: "port numbers are a u8"},

	"RDMAPort.State":     {Max: 32, Why: "sysfs state's word (ACTIVE)"},
	"RDMAPort.PhysState": {Max: 32, Why: "sysfs phys_state's word (LINK_UP)"},
	"RDMAPort.LinkLayer": {Max: 32, Why: "InfiniBand or Ethernet"},
	"RDMAPort.Rate":      {Max: 64, Why: "sysfs rate (100 Gb/sec (4X EDR))"},
	"RDMAPort.GIDs":      {Max: 1024, Why: "a port's GID table (rxe's holds 1024)"},

	"GID.GID":    {Max: gidLen, Why: "an IPv6 address written whole"},
	"GID.Type":   {Max: 16, Why: "RoCE v2 or IB/RoCE v1"},
	"GID.Netdev": {Max: ifNameLen, Why: "IFNAMSIZ"},

	"Tool.Path":    {Max: pathMax, Why: "a path (PATH_MAX)"},
	"Tool.Version": {Max: MaxToolVersion, Why: "a version, copied into every sample of the tool's workloads (SECURITY 138)"},

	// rxe.ensure, rdma.use
	"DeviceInfo.Name":      {Max: ibNameLen, Why: "IB_DEVICE_NAME_MAX"},
	"DeviceInfo.Netdev":    {Max: ifNameLen, Why: "IFNAMSIZ"},
	"DeviceInfo.GID":       {Max: gidLen, Why: "an IPv6 address written whole"},
	"DeviceInfo.IPv4":      {Max: 15, Why: "a dotted IPv4 address"},
	"DeviceInfo.NodeGUID":  {Max: guidLen, Why: "sysfs node_guid"},
	"DeviceInfo.Driver":    {Max: 16, Why: "rxe, siw or hw"},
	"DeviceInfo.Transport": {Max: 16, Why: "RoCE, InfiniBand or iWARP"},

	// proc.*: a handle is the controller's, made a file name (<handle>.stdout).
	"ProcStarted.Handle":           {Max: nameMax, Why: "the handle asked for, a file name"},
	"ProcResult.Handle":            {Max: nameMax, Why: "the handle asked for, a file name"},
	"ProcResult.Argv":              {Max: 1 << 16, Elem: 1 << 17, Why: "the argv the controller sent (tens of arguments; a reply holds at most MaxValues); each argument at most MAX_ARG_STRLEN"},
	"ProcResult.Signal":            {Max: 64, Why: "a signal's name as Go writes it (SECURITY 143)"},
	"ProcResult.Stdout":            {Max: OutputLimit, Why: "the output's tail the agent sends (OutputLimit)"},
	"ProcResult.Stderr":            {Max: OutputLimit, Why: "the output's tail the agent sends (OutputLimit)"},
	"ProcResult.StdoutFile":        {Max: nameMax, Why: "<handle>.stdout, a file name"},
	"ProcResult.StderrFile":        {Max: nameMax, Why: "<handle>.stderr, a file name"},
	"ProcSignalResult.Gone":        {Max: 16, Why: "a Gone* constant"},
	"CaptureStarted.Handle":        {Max: nameMax, Why: "the handle asked for, a file name"},
	"CaptureResult.Handle":         {Max: nameMax, Why: "the handle asked for, a file name"},
	"CaptureResult.Files":          {Max: MaxCaptureFiles, Why: "a capture is a ring of 4 files"},
	"CaptureResult.Stderr":         {Max: OutputLimit, Why: "tcpdump's report (N packets captured), at most OutputLimit"},
	"TCPServing.Handle":            {Max: nameMax, Why: "the handle asked for"},
	"TCPResult.Handle":             {Max: nameMax, Why: "the handle asked for"},
	"FilesList.Root":               {Max: pathMax, Why: "a path (PATH_MAX)"},
	"FilesList.Files":              {Max: FilesListPage, Why: "one page of a listing"},
	"FileInfo.Path":                {Max: pathMax, Why: "a path (PATH_MAX)"},
	"FileInfo.SHA256":              {Max: 64, Why: "a sha256 in hex"},
	"FileData.Path":                {Max: pathMax, Why: "a path (PATH_MAX)"},
	"FileData.Data":                {Max: OutputLimit, Why: "files.read's max_bytes is capped at OutputLimit"},
	"FileWritten.Path":             {Max: pathMax, Why: "a path (PATH_MAX)"},
	"CleanupResult.Stopped":        {Max: 4096, Elem: nameMax, Why: "the handles a lease started; each a file name"},
	"CleanupResult.DevicesDeleted": {Max: 1024, Elem: ibNameLen, Why: "rxe devices (IB_DEVICE_NAME_MAX)"},
	"CleanupResult.Errors":         {Max: 4096, Elem: maxErrText, Cut: true, Why: "one per thing not undone; each an error's text, cut (it says what is left on the host)"},
	"CleanupResult.ImpairsRemoved": {Max: 4096, Elem: ifNameLen, Why: "netdevs (IFNAMSIZ)"},
	"LeaseResult.WorkDir":          {Max: pathMax, Why: "a path (PATH_MAX)"},

	"ProvisionResult.Manager":   {Max: 16, Why: "apt-get, dnf, yum or zypper"},
	"ProvisionResult.Installed": {Max: 4096, Elem: nameMax, Why: "the packages asked for, each a package's name"},
	"ProvisionResult.Present":   {Max: 4096, Elem: nameMax, Why: "the packages asked for, each a package's name"},
	"ProvisionResult.Modules":   {Max: 256, Elem: 64, Why: "the modules asked for (MODULE_NAME_LEN)"},
	"ProvisionResult.LockWait":  {Max: maxErrText, Why: "one sentence naming the lock's holder"},
	"ProvisionResult.Log":       {Max: 512 << 10, Why: "the agent keeps the log's last 256 KiB (provisionLogMax)"},

	"Counters.Values":          {Max: MaxCounters, Why: "the counters of a workload's few devices"},
	"Counters.Unreadable":      {Max: MaxCounters, Why: "as values"},
	"Counters.RouteNetdev":     {Max: ifNameLen, Why: "IFNAMSIZ"},
	"CounterValue.Device":      {Max: ibNameLen, Why: "an RDMA device (IB_DEVICE_NAME_MAX) or netdev"},
	"CounterValue.Source":      {Max: 32, Why: "a Counter* constant"},
	"CounterValue.Name":        {Max: nameMax, Why: "a sysfs file name"},
	"CounterUnreadable.Device": {Max: ibNameLen, Why: "an RDMA device (IB_DEVICE_NAME_MAX) or netdev"},
	"CounterUnreadable.Source": {Max: 32, Why: "a Counter* constant"},
	"CounterUnreadable.Name":   {Max: nameMax, Why: "a sysfs file name"},
	"CounterUnreadable.Reason": {Max: maxErrText, Why: "an error's text"},

	"ImpairResult.Netdev": {Max: ifNameLen, Why: "IFNAMSIZ"},
	"ImpairResult.Qdisc":  {Max: 64, Why: "a qdisc's kind (TCA_KIND)"},
	"ImpairResult.Handle": {Max: 64, Why: "a qdisc handle (8001:)"},
	"ImpairResult.Netem":  {Max: 4096, Why: "netem's parameters as tc prints them"},
	"ImpairResult.GSO":    {Max: 4096, Why: "the agent's sentence on gso_max_segs, a kernel error at most"},
}

// BoundError is an answer refused for a field over its bound.
type BoundError struct {
	Field string // the field's JSON path in the answer: netdevs[3].name
	Key   string // its Bounds key: Netdev.Name ("" when it has none)
	Len   int    // what it held
	Unit  string // of Len: "bytes" or "elements"
	Max   int    // the bound it is over
	Why   string // the bound's reason
}

func (e *BoundError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s: a field rlab declares no bound for (proto.Bounds)", e.Field)
	}
	return fmt.Sprintf("%s: %d %s, more than %d (%s)", e.Field, e.Len, e.Unit, e.Max, e.Why)
}

// CheckBounds checks the answer v (a pointer to a decoded proto type)
// against Bounds: the first field over its bound is returned as a
// *BoundError naming it, and a field marked Cut is cut in place instead.
// A field of a proto type with no declared bound refuses the answer too
// (TestEveryReplyFieldBounded keeps that from happening). Values of other
// packages' types are not looked at.
func CheckBounds(v any) error {
	return checkValue(reflect.ValueOf(v), true)
}

// checkBounds is CheckBounds for the Check methods, which cut nothing: a
// field marked Cut is the decoder's to cut (rpc.Pending.Wait), and v may
// share its slices with the caller's answer.
func checkBounds(v any) error {
	return checkValue(reflect.ValueOf(v), false)
}

var protoPkg = reflect.TypeFor[Bound]().PkgPath()

// fieldInfo is what checkValue needs of one exported field, worked out
// once per type (typeFields): a page of 10,000 listed files is checked
// without a string built or a map looked up per file.
type fieldInfo struct {
	index    int
	embedded bool
	name     string // in JSON
	key      string // in Bounds
	bound    Bound
	declared bool // Bounds has key
}

var fieldCache sync.Map // reflect.Type -> []fieldInfo

func typeFields(t reflect.Type) []fieldInfo {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]fieldInfo)
	}
	var fs []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		key := t.Name() + "." + sf.Name
		b, ok := Bounds[key]
		fs = append(fs, fieldInfo{index: i, embedded: sf.Anonymous, name: jsonName(sf), key: key, bound: b, declared: ok})
	}
	fieldCache.Store(t, fs)
	return fs
}

// under puts the error's field under seg, the field or element holding
// it: the path is built on the way back up, only for an answer refused.
func (e *BoundError) under(seg string) {
	switch {
	case e.Field == "":
		e.Field = seg
	case e.Field[0] == '[' || e.Field[0] == ' ':
		e.Field = seg + e.Field
	default:
		e.Field = seg + "." + e.Field
	}
}

func under(err error, seg string) error {
	if be, ok := err.(*BoundError); ok {
		be.under(seg)
	}
	return err
}

func checkValue(v reflect.Value, cut bool) error {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || v.Type().PkgPath() != protoPkg {
		return nil
	}
	for _, f := range typeFields(v.Type()) {
		fv := v.Field(f.index)
		if f.embedded {
			if err := checkValue(fv, cut); err != nil {
				return err
			}
			continue
		}
		if err := checkField(fv, &f, cut); err != nil {
			return under(err, f.name)
		}
	}
	return nil
}

// NeedsBound reports whether a value of type t needs a bound of its own
// (a string, []byte, slice or map), for TestEveryReplyFieldBounded.
func NeedsBound(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return true
	}
	return false
}

// NeedsElem reports whether a slice or map of type t needs Bound.Elem:
// its elements (a slice's) or keys (a map's) are strings.
func NeedsElem(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	case reflect.Map:
		return t.Key().Kind() == reflect.String
	}
	return false
}

// checkField checks one field's value fv; an error's Field is relative to
// it (empty: the field itself).
func checkField(fv reflect.Value, f *fieldInfo, cut bool) error {
	for fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return nil
		}
		fv = fv.Elem()
	}
	if !NeedsBound(fv.Type()) {
		if fv.Kind() == reflect.Struct {
			return checkValue(fv, cut)
		}
		return nil
	}
	if !f.declared {
		return &BoundError{}
	}
	b := f.bound
	over := func(field string, n int, elem bool) error {
		e := &BoundError{Field: field, Key: f.key, Len: n, Unit: "bytes", Max: b.Max, Why: b.Why}
		if elem {
			e.Max = b.Elem
		} else if k := fv.Kind(); k == reflect.Map || k != reflect.String && fv.Type().Elem().Kind() != reflect.Uint8 {
			e.Unit = "elements"
		}
		return e
	}
	switch fv.Kind() {
	case reflect.String:
		if n := fv.Len(); n > b.Max {
			switch {
			case !b.Cut || cut && !fv.CanSet():
				return over("", n, false)
			case cut:
				fv.SetString(cutHead(fv.String(), b.Max))
			}
		}
	case reflect.Slice, reflect.Array, reflect.Map:
		if n := fv.Len(); n > b.Max {
			return over("", n, false)
		}
		switch {
		case fv.Kind() == reflect.Map:
			it := fv.MapRange()
			for it.Next() {
				k := it.Key()
				if k.Kind() == reflect.String && k.Len() > b.Elem {
					return over(" (a key)", k.Len(), true)
				}
				if err := checkValue(it.Value(), cut); err != nil {
					return under(err, "["+strconv.Quote(cutHead(k.String(), 32))+"]")
				}
			}
		case fv.Type().Elem().Kind() == reflect.Uint8:
			// []byte: its bytes are its elements.
		case fv.Type().Elem().Kind() == reflect.String:
			for i := 0; i < fv.Len(); i++ {
				e := fv.Index(i)
				if n := e.Len(); n > b.Elem {
					switch {
					case !b.Cut || cut && !e.CanSet():
						return over("["+strconv.Itoa(i)+"]", n, true)
					case cut:
						e.SetString(cutHead(e.String(), b.Elem))
					}
				}
			}
		default:
			for i := 0; i < fv.Len(); i++ {
				if err := checkValue(fv.Index(i), cut); err != nil {
					return under(err, "["+strconv.Itoa(i)+"]")
				}
			}
		}
	}
	return nil
}

// jsonName is a field's name in JSON.
func jsonName(sf reflect.StructField) string {
	if tag, _, _ := strings.Cut(sf.Tag.Get("json"), ","); tag != "" && tag != "-" {
		return tag
	}
	return sf.Name
}
