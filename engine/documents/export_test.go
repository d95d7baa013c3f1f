package documents

// WithCSVReaderOnly runs f with CSV documents read again through csv.Reader only, never by
// cutting lines at commas.
func WithCSVReaderOnly(f func()) {
	csvReaderOnly.Store(true)
	defer csvReaderOnly.Store(false)
	f()
}
