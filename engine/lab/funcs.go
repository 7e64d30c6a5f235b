package lab

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// maxFileFuncBytes bounds what file() reads: lab inputs such as a saved
// `terraform output -json` are small, and a bound keeps a typo such as
// file("/dev/zero") from hanging the loader.
const maxFileFuncBytes = 16 << 20

// maxRange bounds range() so an expression cannot allocate without limit.
const maxRange = 100000

// functions returns the functions lab expressions may call: the usual HCL
// (Terraform-like) set, with file paths relative to dir.
func functions(dir string) map[string]function.Function {
	fs := map[string]function.Function{
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc,
		"log": stdlib.LogFunc, "max": stdlib.MaxFunc, "min": stdlib.MinFunc, "pow": stdlib.PowFunc,
		"signum": stdlib.SignumFunc, "parseint": stdlib.ParseIntFunc,
		"chomp": stdlib.ChompFunc, "format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc,
		"indent": stdlib.IndentFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc,
		"regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc, "replace": stdlib.ReplaceFunc,
		"split": stdlib.SplitFunc, "strrev": stdlib.ReverseFunc, "substr": stdlib.SubstrFunc,
		"title": stdlib.TitleFunc, "trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc,
		"trimsuffix": stdlib.TrimSuffixFunc, "trimspace": stdlib.TrimSpaceFunc, "upper": stdlib.UpperFunc,
		"strlen":    stdlib.StrlenFunc,
		"chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc,
		"compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc,
		"distinct": distinctFunc, "element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc,
		"index": stdlib.IndexFunc, "keys": stdlib.KeysFunc, "length": stdlib.LengthFunc,
		"lookup": stdlib.LookupFunc, "merge": stdlib.MergeFunc, "reverse": stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc, "setproduct": stdlib.SetProductFunc,
		"setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc,
		"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
		"range":      boundedRange,
		"jsondecode": jsonDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc, "csvdecode": stdlib.CSVDecodeFunc,
		"yamldecode": yamlDecodeFunc, "yamlencode": ctyyaml.YAMLEncodeFunc, // yaml.go
		"tostring": stdlib.MakeToFunc(cty.String), "tonumber": stdlib.MakeToFunc(cty.Number),
		"tobool": stdlib.MakeToFunc(cty.Bool), "tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap": stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)), "toset": stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"try": tryfunc.TryFunc, "can": tryfunc.CanFunc,
		"file": fileFunc(dir), "fileexists": fileExistsFunc(dir),
		"cidrhost": cidrHostFunc, "cidrnetmask": cidrNetmaskFunc,
	}
	addUnitFuncs(fs) // gbps, usec, ...: unitfuncs.go
	return fs
}

var boundedRange = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "params", Type: cty.Number},
	Type:     function.StaticReturnType(cty.List(cty.Number)),
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		var start, end, step float64 = 0, 0, 1
		fs := make([]float64, len(args))
		for i, a := range args {
			if a.IsNull() {
				return cty.NilVal, function.NewArgErrorf(i, "must not be null")
			}
			fs[i], _ = a.AsBigFloat().Float64()
		}
		switch len(fs) {
		case 1:
			end = fs[0]
		case 2:
			start, end = fs[0], fs[1]
		case 3:
			start, end, step = fs[0], fs[1], fs[2]
		default:
			return cty.NilVal, fmt.Errorf("range takes one to three arguments: end, start and end, or start, end and step")
		}
		if step != 0 && (end-start)/step > maxRange {
			return cty.NilVal, fmt.Errorf("range would have more than %d elements", maxRange)
		}
		return stdlib.RangeFunc.Call(args)
	},
})

// openInLab opens p (relative to dir, or absolute) for reading only if it
// lies under dir once every symlink is resolved: a lab from a shared course
// repository must not read ~/.ssh/id_ed25519 or /etc/shadow into a plan, an
// argv and the run's files. os.Root does the confinement (it resolves each
// component inside the root and refuses one that leaves it).
func openInLab(dir, p string) (*os.File, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rel := p
	if filepath.IsAbs(p) {
		if rel, err = filepath.Rel(abs, p); err != nil {
			return nil, err
		}
	}
	rel = filepath.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, outsideLab(abs)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// Opened, then checked on the open file (non-blocking: a FIFO does not
	// wait for a writer): a name checked and then opened could be swapped
	// for a FIFO in between.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if strings.Contains(err.Error(), "escapes") {
			return nil, outsideLab(abs)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, errors.New("not a regular file")
	}
	return f, nil
}

func outsideLab(dir string) error {
	return fmt.Errorf("outside the lab's folder %s: file() and fileexists() read only files under it (symlinks resolved); copy the file into the lab's folder", dir)
}

func fileFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			f, err := openInLab(dir, p)
			if err != nil {
				return cty.NilVal, fmt.Errorf("read %s: %w", p, err)
			}
			defer f.Close()
			b, err := io.ReadAll(io.LimitReader(f, maxFileFuncBytes+1))
			if err != nil {
				return cty.NilVal, fmt.Errorf("read %s: %w", p, err)
			}
			if len(b) > maxFileFuncBytes {
				return cty.NilVal, fmt.Errorf("read %s: larger than %d bytes", p, maxFileFuncBytes)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

// fileExistsFunc answers false for a file outside the lab's folder, as
// file() would not read it.
func fileExistsFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			f, err := openInLab(dir, args[0].AsString())
			if err != nil {
				return cty.False, nil
			}
			f.Close()
			return cty.True, nil
		},
	})
}

var cidrHostFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}, {Name: "hostnum", Type: cty.Number}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		pfx, err := netip.ParsePrefix(args[0].AsString())
		if err != nil {
			return cty.NilVal, function.NewArgErrorf(0, "invalid CIDR prefix: %s", err)
		}
		pfx = pfx.Masked()
		num := args[1].AsBigFloat()
		if !num.IsInt() {
			return cty.NilVal, function.NewArgErrorf(1, "host number must be a whole number")
		}
		n, _ := num.Int(nil)
		bits := pfx.Addr().BitLen()
		hostBits := uint(bits - pfx.Bits())
		size := new(big.Int).Lsh(big.NewInt(1), hostBits)
		if n.Sign() < 0 {
			n.Add(n, size) // -1 is the last address, as in Terraform
		}
		if n.Sign() < 0 || n.Cmp(size) >= 0 {
			return cty.NilVal, function.NewArgErrorf(1, "prefix %s has no host number %s", pfx, num.Text('f', 0))
		}
		base := new(big.Int).SetBytes(pfx.Addr().AsSlice())
		base.Add(base, n)
		buf := base.FillBytes(make([]byte, bits/8))
		addr, _ := netip.AddrFromSlice(buf)
		return cty.StringVal(addr.String()), nil
	},
})

var cidrNetmaskFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		pfx, err := netip.ParsePrefix(args[0].AsString())
		if err != nil || !pfx.Addr().Is4() {
			return cty.NilVal, function.NewArgErrorf(0, "not an IPv4 CIDR prefix: %s", args[0].AsString())
		}
		m := uint32(0xffffffff) << (32 - pfx.Bits())
		if pfx.Bits() == 0 {
			m = 0
		}
		return cty.StringVal(netip.AddrFrom4([4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}).String()), nil
	},
})
