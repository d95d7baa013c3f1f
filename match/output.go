package match

import (
	"io"
)

// DatasetResult is what MatchDatasets found, by position in the two Datasets: Pairs
// ordered by left index, the unmatched positions ascending.
type DatasetResult struct {
	Pairs          []IndexPair
	UnmatchedLeft  []int
	UnmatchedRight []int
	// Policy is the effective configuration, as in MatchResult.
	Policy map[string]any

	left, right Dataset
}

// MatchDatasets is Match on Datasets: the same pairs, by position, for the same records
// (Records(left) and Records(right) give exactly Match's). With RawRecords the records are
// never decoded, and the outputs are written from their bytes (Outputs).
func MatchDatasets(left, right Dataset, opts MatchOptions) (*DatasetResult, error) {
	m, err := matchIndexes(left, right, opts)
	if err != nil {
		return nil, err
	}
	unmatched := func(used []bool) []int {
		out := make([]int, 0, len(used)-len(m.pairs))
		for i, u := range used {
			if !u {
				out = append(out, i)
			}
		}
		return out
	}
	return &DatasetResult{
		Pairs:          m.pairs,
		UnmatchedLeft:  unmatched(m.usedL),
		UnmatchedRight: unmatched(m.usedR),
		Policy:         m.policy,
		left:           left,
		right:          right,
	}, nil
}

// Outputs returns the step's three outputs as JSON arrays to be written element by
// element: the matched elements {"left": <record>, "right": <record>}, then the unmatched
// left and right records, each record's JSON as its Dataset gives it (a raw record's own
// bytes, unchanged).
func (r *DatasetResult) Outputs() (matched, unmatchedLeft, unmatchedRight Output) {
	matched = Output{n: len(r.Pairs), elem: func(dst []byte, k int) ([]byte, error) {
		p := r.Pairs[k]
		dst = append(dst, `{"left":`...)
		dst, err := r.left.AppendJSON(dst, p.Left)
		if err != nil {
			return dst, err
		}
		dst = append(dst, `,"right":`...)
		if dst, err = r.right.AppendJSON(dst, p.Right); err != nil {
			return dst, err
		}
		return append(dst, '}'), nil
	}}
	records := func(d Dataset, idx []int) Output {
		return Output{n: len(idx), elem: func(dst []byte, k int) ([]byte, error) { return d.AppendJSON(dst, idx[k]) }}
	}
	return matched, records(r.left, r.UnmatchedLeft), records(r.right, r.UnmatchedRight)
}

// Output is one of the matcher's outputs: a JSON array whose elements are made one at a
// time from the source records' JSON, so that a caller can store it in parts without
// holding the whole array.
type Output struct {
	n    int
	elem func(dst []byte, k int) ([]byte, error)
}

// Len is the number of elements.
func (o Output) Len() int { return o.n }

// MarshalJSON writes the whole array, so that an Output encodes wherever a value is
// encoded with encoding/json.
func (o Output) MarshalJSON() ([]byte, error) { return o.AppendArray(nil, 0, o.n) }

// AppendElement appends element k's JSON.
func (o Output) AppendElement(dst []byte, k int) ([]byte, error) { return o.elem(dst, k) }

// AppendArray appends the JSON array of elements from to to-1: one part of the output.
func (o Output) AppendArray(dst []byte, from, to int) ([]byte, error) {
	dst = append(dst, '[')
	for k := from; k < to; k++ {
		if k > from {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = o.elem(dst, k); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// writeChunk is about how much WriteTo gathers before each Write.
const writeChunk = 64 << 10

// WriteTo writes the whole array to w in writes of about 64 KiB, holding no more than
// that (and one element).
func (o Output) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 0, writeChunk+4<<10)
	var written int64
	flush := func() error {
		n, err := w.Write(buf)
		written += int64(n)
		buf = buf[:0]
		return err
	}
	buf = append(buf, '[')
	for k := range o.n {
		if k > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = o.elem(buf, k); err != nil {
			return written, err
		}
		if len(buf) >= writeChunk {
			if err := flush(); err != nil {
				return written, err
			}
		}
	}
	buf = append(buf, ']')
	return written, flush()
}
