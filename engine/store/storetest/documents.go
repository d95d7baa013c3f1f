package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testDocuments is the documents part of the suite (documents.Store, which storage.Full
// embeds). Its parts share one store; each works in organizations of its own.
func testDocuments(t *testing.T, b *bundle) {
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, b *bundle, org string)
	}{
		{"CreateGet", testDocumentCreateGet},
		{"Versions", testDocumentVersions},
		{"VersionsConcurrent", testDocumentVersionsConcurrent},
		{"List", testDocumentList},
		{"Delete", testDocumentDelete},
		{"DBBlobs", testDocumentDBBlobs},
		{"EventSubjects", testDocumentEventSubjects},
		{"Tenancy", testDocumentTenancy},
		{"Tx", testDocumentTx},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, b, "docs_"+tt.name) })
	}
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// newDocument is a document of org with version 1 holding content (not stored yet).
func newDocument(org, name string, content []byte, tags ...string) *documents.Document {
	return &documents.Document{
		OrgID: org, Name: name, Tags: tags,
		Versions: []documents.Version{{Version: 1, ContentType: "text/csv", SizeBytes: int64(len(content)), SHA256: sum(content)}},
	}
}

func (b *bundle) document(t *testing.T, org, name string, tags ...string) *documents.Document {
	t.Helper()
	d := newDocument(org, name, []byte("a,b\n1,2\n"), tags...)
	require.NoError(t, b.s.CreateDocument(b.ctx, d))
	require.NotEmpty(t, d.ID)
	return d
}

func testDocumentCreateGet(t *testing.T, b *bundle, org string) {
	expires := time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("x", 3600))
	d := newDocument(org, "rows.csv", []byte("a\n1\n"), "finance", "q3")
	d.ExpiresAt = &expires
	require.NoError(t, b.s.CreateDocument(b.ctx, d))
	require.Regexp(t, `^doc_[0-9a-f-]{36}$`, d.ID)
	require.Equal(t, 1, d.Version)
	require.Equal(t, "text/csv", d.ContentType)
	require.Equal(t, int64(4), d.SizeBytes)

	got, err := b.s.GetDocument(b.ctx, org, d.ID)
	require.NoError(t, err)
	require.Equal(t, d.ID, got.ID)
	require.Equal(t, org, got.OrgID)
	require.Equal(t, "rows.csv", got.Name)
	require.Equal(t, []string{"finance", "q3"}, got.Tags)
	require.Equal(t, 1, got.Version)
	require.Equal(t, "text/csv", got.ContentType)
	require.Equal(t, int64(4), got.SizeBytes)
	require.Equal(t, expires.UTC().Truncate(time.Microsecond), *got.ExpiresAt)
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	require.Equal(t, d.CreatedAt, got.CreatedAt)
	require.Len(t, got.Versions, 1)
	require.Equal(t, d.Versions[0], got.Versions[0])
	require.Equal(t, sum([]byte("a\n1\n")), got.Versions[0].SHA256)

	// No tags reads as [], no expiry as nil.
	plain := b.document(t, org, "plain.csv")
	got, err = b.s.GetDocument(b.ctx, org, plain.ID)
	require.NoError(t, err)
	require.Equal(t, []string{}, got.Tags)
	require.Nil(t, got.ExpiresAt)

	// An id is unique in its organization only.
	again := newDocument(org, "again.csv", []byte("x"))
	again.ID = d.ID
	require.ErrorIs(t, b.s.CreateDocument(b.ctx, again), storage.ErrConflict)
	again.OrgID = org + "_other"
	require.NoError(t, b.s.CreateDocument(b.ctx, again))

	_, err = b.s.GetDocument(b.ctx, org, "doc_missing")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.Error(t, b.s.CreateDocument(b.ctx, &documents.Document{OrgID: org, Name: "no versions"}))
}

func testDocumentVersions(t *testing.T, b *bundle, org string) {
	d := b.document(t, org, "book.xlsx", "t")
	for i, ct := range []string{"application/json", documents.MediaXLSX} {
		v := &documents.Version{ContentType: ct, SizeBytes: int64(10 * (i + 2)), SHA256: sum([]byte(ct))}
		got, err := b.s.AddDocumentVersion(b.ctx, org, d.ID, v)
		require.NoError(t, err)
		require.Equal(t, i+2, v.Version)
		require.Equal(t, i+2, got.Version)
		require.Equal(t, ct, got.ContentType)
		require.Equal(t, v.SizeBytes, got.SizeBytes)
		require.Equal(t, []string{"t"}, got.Tags)
		require.Equal(t, "book.xlsx", got.Name)
		require.Empty(t, got.Versions)
	}
	got, err := b.s.GetDocument(b.ctx, org, d.ID)
	require.NoError(t, err)
	require.Equal(t, 3, got.Version)
	require.Equal(t, documents.MediaXLSX, got.ContentType)
	require.Len(t, got.Versions, 3)
	for i, v := range got.Versions {
		require.Equal(t, i+1, v.Version)
	}
	require.Equal(t, "application/json", got.Versions[1].ContentType)
	require.Equal(t, int64(20), got.Versions[1].SizeBytes)
	require.Equal(t, d.CreatedAt, got.CreatedAt, "a version does not change created_at")

	for _, tc := range []struct{ ask, want int }{{0, 3}, {1, 1}, {2, 2}, {3, 3}} {
		doc, v, err := b.s.GetDocumentVersion(b.ctx, org, d.ID, tc.ask)
		require.NoError(t, err)
		require.Equal(t, tc.want, v.Version)
		require.Equal(t, d.ID, doc.ID)
		require.Equal(t, 3, doc.Version)
	}
	_, _, err = b.s.GetDocumentVersion(b.ctx, org, d.ID, 4)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, _, err = b.s.GetDocumentVersion(b.ctx, org, "doc_missing", 0)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.AddDocumentVersion(b.ctx, org, "doc_missing", &documents.Version{ContentType: "text/csv"})
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// testDocumentVersionsConcurrent: versions uploaded at once get distinct, gapless numbers.
func testDocumentVersionsConcurrent(t *testing.T, b *bundle, org string) {
	d := b.document(t, org, "busy.csv")
	const n = 8
	var wg sync.WaitGroup
	got := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
				v := &documents.Version{ContentType: "text/csv", SizeBytes: int64(i), SHA256: sum([]byte{byte(i)})}
				if _, err := tx.AddDocumentVersion(ctx, org, d.ID, v); err != nil {
					return err
				}
				got[i] = v.Version
				return tx.PutDocumentBlob(ctx, documents.BlobKey{OrgID: org, DocumentID: d.ID, Version: v.Version}, []byte{byte(i)})
			})
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for i := range n {
		require.NoError(t, errs[i])
		require.False(t, seen[got[i]], "version %d given twice", got[i])
		seen[got[i]] = true
		data, err := b.s.GetDocumentBlob(b.ctx, documents.BlobKey{OrgID: org, DocumentID: d.ID, Version: got[i]})
		require.NoError(t, err)
		require.Equal(t, []byte{byte(i)}, data)
	}
	for v := 2; v <= n+1; v++ {
		require.True(t, seen[v], "version %d missing", v)
	}
	doc, err := b.s.GetDocument(b.ctx, org, d.ID)
	require.NoError(t, err)
	require.Equal(t, n+1, doc.Version)
	require.Len(t, doc.Versions, n+1)
}

func testDocumentList(t *testing.T, b *bundle, org string) {
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 7 {
		tags := []string{"all"}
		if i%2 == 0 {
			tags = append(tags, "even")
		}
		d := newDocument(org, fmt.Sprintf("d%d.csv", i), []byte("x"), tags...)
		// Two share a timestamp: the id breaks the tie.
		d.CreatedAt = base.Add(time.Duration(min(i, 5)) * time.Minute)
		require.NoError(t, b.s.CreateDocument(b.ctx, d))
		ids = append(ids, d.ID)
	}
	b.document(t, org+"_other", "other.csv", "all")

	key := func(d documents.Document) string { return d.ID }
	list := func(tag string) func(svctype.ListOptions) (svctype.Page[documents.Document], error) {
		return func(o svctype.ListOptions) (svctype.Page[documents.Document], error) {
			return b.s.ListDocuments(b.ctx, org, documents.ListFilter{Tag: tag, ListOptions: o})
		}
	}
	all := collect(t, 3, key, list(""))
	require.Len(t, all, 7)
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		newer := prev.CreatedAt.After(cur.CreatedAt) || (prev.CreatedAt.Equal(cur.CreatedAt) && prev.ID > cur.ID)
		require.True(t, newer, "newest first: %s then %s", prev.ID, cur.ID)
	}
	for _, d := range all {
		require.Empty(t, d.Versions, "listings carry no versions")
		require.Contains(t, d.Tags, "all")
	}
	require.Len(t, collect(t, 2, key, list("all")), 7)
	even := collect(t, 2, key, list("even"))
	require.Len(t, even, 4)
	for _, d := range even {
		require.Contains(t, d.Tags, "even")
	}
	require.Empty(t, collect(t, 2, key, list("none")))

	_, err := b.s.ListDocuments(b.ctx, org, documents.ListFilter{ListOptions: svctype.ListOptions{Cursor: "%%%"}})
	require.ErrorIs(t, err, storage.ErrInvalidCursor)
}

func testDocumentDelete(t *testing.T, b *bundle, org string) {
	d := b.document(t, org, "gone.csv", "x")
	_, err := b.s.AddDocumentVersion(b.ctx, org, d.ID, &documents.Version{ContentType: "text/csv", SizeBytes: 1, SHA256: sum(nil)})
	require.NoError(t, err)
	for v := 1; v <= 2; v++ {
		require.NoError(t, b.s.PutDocumentBlob(b.ctx, documents.BlobKey{OrgID: org, DocumentID: d.ID, Version: v}, []byte("c")))
	}
	kept := b.document(t, org, "kept.csv", "x")

	gone, err := b.s.DeleteDocument(b.ctx, org, d.ID)
	require.NoError(t, err)
	require.Equal(t, d.ID, gone.ID)
	require.Equal(t, "gone.csv", gone.Name)
	require.Len(t, gone.Versions, 2, "the deleted document comes back with its versions")

	_, err = b.s.GetDocument(b.ctx, org, d.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)
	for v := 1; v <= 2; v++ {
		_, err := b.s.GetDocumentBlob(b.ctx, documents.BlobKey{OrgID: org, DocumentID: d.ID, Version: v})
		require.ErrorIs(t, err, storage.ErrNotFound, "version %d's blob", v)
	}
	page, err := b.s.ListDocuments(b.ctx, org, documents.ListFilter{Tag: "x"})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, kept.ID, page.Items[0].ID)
	_, err = b.s.DeleteDocument(b.ctx, org, d.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)

	// Nothing of it is left to collide with: the id can be used again.
	again := newDocument(org, "again.csv", []byte("y"), "x")
	again.ID = d.ID
	require.NoError(t, b.s.CreateDocument(b.ctx, again))
}

func testDocumentDBBlobs(t *testing.T, b *bundle, org string) {
	d := b.document(t, org, "blob.csv")
	key := documents.BlobKey{OrgID: org, DocumentID: d.ID, Version: 1}
	require.ErrorIs(t, b.s.PutDocumentBlob(b.ctx, documents.BlobKey{OrgID: org, DocumentID: d.ID, Version: 2}, []byte("x")),
		storage.ErrNotFound, "a blob needs its version row")
	require.ErrorIs(t, b.s.PutDocumentBlob(b.ctx, documents.BlobKey{OrgID: org, DocumentID: "doc_missing", Version: 1}, []byte("x")),
		storage.ErrNotFound)
	require.NoError(t, b.s.PutDocumentBlob(b.ctx, key, []byte("first")))
	require.NoError(t, b.s.PutDocumentBlob(b.ctx, key, []byte("second")), "put replaces")
	got, err := b.s.GetDocumentBlob(b.ctx, key)
	require.NoError(t, err)
	require.Equal(t, "second", string(got))
	require.NoError(t, b.s.DeleteDocumentBlob(b.ctx, key))
	require.ErrorIs(t, b.s.DeleteDocumentBlob(b.ctx, key), storage.ErrNotFound)
}

func testDocumentEventSubjects(t *testing.T, b *bundle, org string) {
	require.NoError(t, b.s.PutEventSubjects(b.ctx, org, nil))
	require.NoError(t, b.s.PutEventSubjects(b.ctx, org, []documents.EventSubject{
		{DeliveryID: "dlv_1", DocumentID: "doc_1", ContentType: "text/csv", Tags: []string{"a", "b"}},
		{DeliveryID: "dlv_2", DocumentID: "doc_1", ContentType: "application/json"},
	}))
	got, err := b.s.GetEventSubject(b.ctx, org, "dlv_1")
	require.NoError(t, err)
	require.Equal(t, documents.EventSubject{DeliveryID: "dlv_1", DocumentID: "doc_1", ContentType: "text/csv", Tags: []string{"a", "b"}}, *got)
	got, err = b.s.GetEventSubject(b.ctx, org, "dlv_2")
	require.NoError(t, err)
	require.Equal(t, []string{}, got.Tags)
	_, err = b.s.GetEventSubject(b.ctx, org+"_other", "dlv_1")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testDocumentTenancy(t *testing.T, b *bundle, org string) {
	other := org + "_b"
	d := b.document(t, org, "mine.csv", "secret")
	key := documents.BlobKey{OrgID: org, DocumentID: d.ID, Version: 1}
	require.NoError(t, b.s.PutDocumentBlob(b.ctx, key, []byte("mine")))
	theirs := documents.BlobKey{OrgID: other, DocumentID: d.ID, Version: 1}

	for name, call := range map[string]func() error{
		"GetDocument": func() error { _, err := b.s.GetDocument(b.ctx, other, d.ID); return err },
		"GetDocumentVersion": func() error {
			_, _, err := b.s.GetDocumentVersion(b.ctx, other, d.ID, 1)
			return err
		},
		"AddDocumentVersion": func() error {
			_, err := b.s.AddDocumentVersion(b.ctx, other, d.ID, &documents.Version{ContentType: "text/plain"})
			return err
		},
		"DeleteDocument":     func() error { _, err := b.s.DeleteDocument(b.ctx, other, d.ID); return err },
		"GetDocumentBlob":    func() error { _, err := b.s.GetDocumentBlob(b.ctx, theirs); return err },
		"PutDocumentBlob":    func() error { return b.s.PutDocumentBlob(b.ctx, theirs, []byte("evil")) },
		"DeleteDocumentBlob": func() error { return b.s.DeleteDocumentBlob(b.ctx, theirs) },
	} {
		require.ErrorIs(t, call(), storage.ErrNotFound, name)
	}
	page, err := b.s.ListDocuments(b.ctx, other, documents.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	page, err = b.s.ListDocuments(b.ctx, other, documents.ListFilter{Tag: "secret"})
	require.NoError(t, err)
	require.Empty(t, page.Items)

	got, err := b.s.GetDocument(b.ctx, org, d.ID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Version)
	require.Len(t, got.Versions, 1)
	data, err := b.s.GetDocumentBlob(b.ctx, key)
	require.NoError(t, err)
	require.Equal(t, "mine", string(data))
}

func testDocumentTx(t *testing.T, b *bundle, org string) {
	var id string
	err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		d := newDocument(org, "tx.csv", []byte("x"), "t")
		if err := tx.CreateDocument(ctx, d); err != nil {
			return err
		}
		id = d.ID
		if err := tx.PutDocumentBlob(ctx, documents.BlobKey{OrgID: org, DocumentID: d.ID, Version: 1}, []byte("x")); err != nil {
			return err
		}
		if err := tx.PutEventSubjects(ctx, org, []documents.EventSubject{{DeliveryID: "dlv_tx", DocumentID: d.ID}}); err != nil {
			return err
		}
		// The transaction sees its own writes.
		if _, err := tx.GetDocumentBlob(ctx, documents.BlobKey{OrgID: org, DocumentID: d.ID, Version: 1}); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	_, err = b.s.GetDocument(b.ctx, org, id)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.GetDocumentBlob(b.ctx, documents.BlobKey{OrgID: org, DocumentID: id, Version: 1})
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.GetEventSubject(b.ctx, org, "dlv_tx")
	require.ErrorIs(t, err, storage.ErrNotFound)
	page, err := b.s.ListDocuments(b.ctx, org, documents.ListFilter{Tag: "t"})
	require.NoError(t, err)
	require.Empty(t, page.Items)
}

// BlobStoreSuite tests a documents.BlobStore: DBBlobs over every storage.Full and DirBlobs
// pass it. open returns an empty blob store for one subtest and a function that makes a key
// storable (the database needs the version row a blob belongs to; a directory needs
// nothing).
func BlobStoreSuite(t *testing.T, open func(t *testing.T) (documents.BlobStore, func(t *testing.T, key documents.BlobKey))) {
	ctx := context.Background()
	tests := []struct {
		name string
		fn   func(t *testing.T, bs documents.BlobStore, prepare func(*testing.T, documents.BlobKey))
	}{
		{"RoundTrip", func(t *testing.T, bs documents.BlobStore, prepare func(*testing.T, documents.BlobKey)) {
			big := bytes.Repeat([]byte{0, 1, 2, 0xff, '\n', '\''}, 1<<19) // 3 MiB, every byte kind
			for i, data := range [][]byte{[]byte("a,b\n1,2\n"), big, {0}} {
				key := documents.BlobKey{OrgID: "o1", DocumentID: "doc_rt", Version: i + 1}
				prepare(t, key)
				require.NoError(t, bs.Put(ctx, key, data))
				got, err := bs.Get(ctx, key)
				require.NoError(t, err)
				require.True(t, bytes.Equal(data, got), "version %d comes back byte for byte", i+1)
			}
		}},
		{"Replace", func(t *testing.T, bs documents.BlobStore, prepare func(*testing.T, documents.BlobKey)) {
			key := documents.BlobKey{OrgID: "o1", DocumentID: "doc_re", Version: 1}
			prepare(t, key)
			require.NoError(t, bs.Put(ctx, key, []byte("one")))
			require.NoError(t, bs.Put(ctx, key, []byte("two")))
			got, err := bs.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, "two", string(got))
		}},
		{"Missing", func(t *testing.T, bs documents.BlobStore, prepare func(*testing.T, documents.BlobKey)) {
			key := documents.BlobKey{OrgID: "o1", DocumentID: "doc_none", Version: 1}
			_, err := bs.Get(ctx, key)
			require.ErrorIs(t, err, svctype.ErrNotFound)
			require.ErrorIs(t, bs.Delete(ctx, key), svctype.ErrNotFound)
		}},
		{"Delete", func(t *testing.T, bs documents.BlobStore, prepare func(*testing.T, documents.BlobKey)) {
			one := documents.BlobKey{OrgID: "o1", DocumentID: "doc_del", Version: 1}
			two := documents.BlobKey{OrgID: "o1", DocumentID: "doc_del", Version: 2}
			prepare(t, one)
			prepare(t, two)
			require.NoError(t, bs.Put(ctx, one, []byte("1")))
			require.NoError(t, bs.Put(ctx, two, []byte("2")))
			require.NoError(t, bs.Delete(ctx, one))
			_, err := bs.Get(ctx, one)
			require.ErrorIs(t, err, svctype.ErrNotFound)
			got, err := bs.Get(ctx, two)
			require.NoError(t, err, "other versions stay")
			require.Equal(t, "2", string(got))
		}},
		{"KeysApart", func(t *testing.T, bs documents.BlobStore, prepare func(*testing.T, documents.BlobKey)) {
			keys := []documents.BlobKey{
				{OrgID: "o1", DocumentID: "doc_k", Version: 1},
				{OrgID: "o2", DocumentID: "doc_k", Version: 1},
				{OrgID: "o1", DocumentID: "doc_k", Version: 2},
				{OrgID: "o1", DocumentID: "doc_j", Version: 1},
			}
			for i, k := range keys {
				prepare(t, k)
				require.NoError(t, bs.Put(ctx, k, []byte{byte(i)}))
			}
			for i, k := range keys {
				got, err := bs.Get(ctx, k)
				require.NoError(t, err)
				require.Equal(t, []byte{byte(i)}, got, "%+v", k)
			}
			require.NoError(t, bs.Delete(ctx, keys[0]))
			_, err := bs.Get(ctx, keys[1])
			require.NoError(t, err, "another org's blob of the same document id stays")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bs, prepare := open(t)
			if prepare == nil {
				prepare = func(*testing.T, documents.BlobKey) {}
			}
			tt.fn(t, bs, prepare)
		})
	}
}

// DocumentVersionFor returns a BlobStoreSuite prepare function over s: it creates the
// document a key names (in the key's org) and versions up to the key's.
func DocumentVersionFor(s storage.Full) func(t *testing.T, key documents.BlobKey) {
	return func(t *testing.T, key documents.BlobKey) {
		t.Helper()
		ctx := context.Background()
		doc, err := s.GetDocument(ctx, key.OrgID, key.DocumentID)
		if errors.Is(err, storage.ErrNotFound) {
			d := newDocument(key.OrgID, key.DocumentID+".bin", nil)
			d.ID = key.DocumentID
			require.NoError(t, s.CreateDocument(ctx, d))
			doc, err = s.GetDocument(ctx, key.OrgID, key.DocumentID)
		}
		require.NoError(t, err)
		for v := doc.Version; v < key.Version; v++ {
			_, err := s.AddDocumentVersion(ctx, key.OrgID, key.DocumentID, &documents.Version{ContentType: "application/octet-stream"})
			require.NoError(t, err)
		}
	}
}
