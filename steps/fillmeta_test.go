package steps

import (
	"reflect"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestFillMetaCopiesEveryField: every member of the metadata a step hands
// FillMeta reaches its samples (tcp's bytes went missing when they became
// fields of their own: a field FillMeta does not name is dropped).
func TestFillMetaCopiesEveryField(t *testing.T) {
	var m results.Meta
	v := reflect.ValueOf(&m).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"x"}))
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]string{"k": "v"}))
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			p.Elem().Set(reflect.ValueOf(7).Convert(f.Type().Elem()))
			f.Set(p)
		default:
			t.Fatalf("Meta.%s: kind %s, teach this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	ss := []results.Sample{{Metric: "m"}}
	FillMeta(ss, m)
	got := reflect.ValueOf(ss[0].Meta)
	for i := range got.NumField() {
		if name := got.Type().Field(i).Name; name != "Repeat" && got.Field(i).IsZero() {
			t.Errorf("FillMeta drops Meta.%s", name)
		}
	}
	if ss[0].Meta.Repeat != 7 {
		t.Errorf("repeat %d", ss[0].Meta.Repeat)
	}
}
