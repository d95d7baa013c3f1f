//go:build !unix

package documents

import "context"

// Map reads the blob (BlobMapper): this platform's files are not mapped.
func (b *DirBlobs) Map(ctx context.Context, key BlobKey) ([]byte, func(), error) {
	data, err := b.Get(ctx, key)
	return data, func() {}, err
}
