package gpu

import (
	"reflect"
	"testing"
)

func TestRing(t *testing.T) {
	tests := []struct {
		cap    int
		push   []int
		want   []int
		last   int
		hasLst bool
	}{
		{cap: 3, push: nil, want: nil},
		{cap: 3, push: []int{1, 2}, want: []int{1, 2}, last: 2, hasLst: true},
		{cap: 3, push: []int{1, 2, 3, 4, 5}, want: []int{3, 4, 5}, last: 5, hasLst: true},
		{cap: 0, push: []int{7, 8}, want: []int{8}, last: 8, hasLst: true},
	}
	for _, tc := range tests {
		r := NewRing[int](tc.cap)
		for _, v := range tc.push {
			r.Push(v)
		}
		if got := r.AppendTo(nil); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NewRing(%d) after Push%v: AppendTo = %v, want %v", tc.cap, tc.push, got, tc.want)
		}
		if l, ok := r.Last(); l != tc.last || ok != tc.hasLst {
			t.Errorf("NewRing(%d) after Push%v: Last = %v, %v, want %v, %v", tc.cap, tc.push, l, ok, tc.last, tc.hasLst)
		}
	}
}
