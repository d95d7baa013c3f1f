// Package match owns record matching for the matcher and nway_match steps: Match pairs two
// datasets one to one, NWay groups 2 to 4 legs by key and classifies each group, and
// Similarity is the fuzzy text score both use (SimilarityAtLeast its verdict against a
// cut-off; Prepare and SimilarityPrepared the same score for a text compared with many). It is pure: it takes records (decoded JSON, or JSON bytes it indexes without
// decoding) and returns values, with no storage, no I/O beyond writing outputs to a writer
// it is given, and no clock; the engine resolves the step's properties, writes the outputs
// into the run context and upserts the exception rows.
//
// # Records and values
//
// A record is a map[string]any as encoding/json decodes it. Numbers may be float64,
// json.Number, any Go integer or float, or a string holding a plain decimal number
// ("12.50", as CSV extraction gives). Dates are "YYYY-MM-DD" or RFC 3339 strings; a
// timestamp counts as the calendar date written in it. Match keys compare as text, with no
// other normalisation: a string as it is (no trimming, no case folding), a number in its
// shortest decimal form (so 1001, 1001.0, json.Number("1001") and "1001" are one key),
// true/false, and canonical JSON for an object or array. A composite key joins its fields'
// texts with "|" (each "\" and "|" inside escaped by a backslash); that text is the
// group's match_key. A record whose matchOn field is missing or null has no key.
//
// Currency amounts are compared in minor units: each value is rounded to hundredths (half
// away from zero, on its shortest decimal form) and the hundredths are compared or summed
// as integers, so 0.1 + 0.2 equals 0.3. A tolerance of v allows floor(100*v) hundredths.
//
// # Datasets and raw records
//
// Match takes []Record; MatchDatasets takes any two Datasets and gives the same pairs by
// position (IndexPair). A Dataset is read a few top-level fields of a record at a time
// (Fields, each record once) and written out record by record (AppendJSON). Records
// wraps []Record. RawRecords keeps a JSON array of objects in the bytes it came in, each
// record an offset range into them: no map per record, which at 1,000,000 records is the
// difference between about 500 bytes of heap a record and the JSON's own 140. A raw field
// is a Value: its kind and its text, a number's text as written. It reads exactly as
// encoding/json would decode it: a number through strconv.ParseFloat, as float64 and
// json.Number are, so the key text and the minor units are the same; a string with its
// escapes decoded ("caf\u00e9" is the key "café"), bytes that are not UTF-8 as U+FFFD;
// an object or array as the canonical JSON of its decoding; and of duplicate keys the
// last, in a record and inside a key's object alike. A raw result's outputs (Outputs, one
// Output per array) are written from the records' bytes, unchanged, element by element
// or in parts (AppendArray), so a large output need not be held whole. A caller holding
// decoded records passes Records(recs); one holding an array's JSON bytes passes
// NewRawRecords(b); the two sides may differ.
//
// # Matcher (2-way)
//
// Match(left, right, MatchOptions) pairs records one to one. A pair must share the matchOn
// values and lie within the tolerance on AmountKey (default "amount"), within
// DateWindowDays on DateKey (default "date") and at or above FuzzyThreshold on
// DescriptionKey (default "description"); a nil option is not compared. Candidates come
// from a hash index on the matchOn key, then, within a key, from the records sorted by
// amount (or date) and scanned over the tolerance (or window): never a nested loop over
// the inputs. The best pairs are taken first, by smallest amount difference, smallest date
// drift, highest similarity, then the compared values and, for records equal on all of
// them, the lowest index; so the result does not depend on the input order (up to which
// of several interchangeable records is used). The step writes, under its three output
// keys, the matched elements {left, right} and the unmatched source records unchanged;
// MatchResult.Policy is the effective configuration for the matcher.completed event.
//
// # N-way match
//
// NWay(legs, NWayOptions) groups the records of 2 to 4 legs by the matchOn key. A key in
// one leg only makes its records orphans, as does a record without a key; a key in some
// legs but not all is a missing_leg group; a group in every leg is full when every check
// passes and variance otherwise. The checks compare every pair of legs present: the sums
// of each tolerance field (abs: float sums, order-independent; currency: minor units;
// pairs overrides per leg pair, "a:b" the same as "b:a"), the date window, the fuzzy
// threshold, then the rules. The same inputs give byte-identical results, and reordering
// records within legs changes no classification or count.
//
// NWayResult.Context returns the step's context keys:
//
//	matchGroupCounts      {"groups": n, "full": n, "missing_leg": n, "variance": n, "orphan": n}
//	matchGroups           group rows (below), sorted by match_key
//	matchOrphans          orphan rows (below), by leg order, then index
//	matchGroupExceptions  exception rows (below): non-full groups in key order, then orphans
//
// A group row (Group):
//
//	{
//	  "schema_version": "svc.match-group.v1",
//	  "match_key":      "INV-1",                         // the key text
//	  "classification": "full" | "variance" | "missing_leg",
//	  "legs_present":   ["ledger", "bank"],              // leg order
//	  "missing_legs":   ["processor"],                   // leg order; [] when none
//	  "legs": {                                          // every leg, present or not
//	    "ledger": {
//	      "count":   1,                                  // records of this leg in the group
//	      "indexes": [4],                                // their positions in the leg, ascending
//	      "records": [{...}],                            // the source records, unchanged
//	      "sums":    {"amount": 100.5}                   // per tolerance field; {} for an absent leg
//	    },
//	    ...
//	  },
//	  "discrepancies": [                                 // [] for a full group
//	    {"kind": "tolerance",     "field": "amount", "legs": ["ledger", "bank"],
//	     "values": [100.5, 99], "difference": 1.5, "allowed": 0.5},
//	    {"kind": "date_window",   "field": "date", "legs": ["ledger", "bank"],
//	     "values": ["2024-03-01", "2024-03-09"], "difference": 8, "allowed": 3},
//	    {"kind": "similarity",    "field": "description", "legs": ["ledger", "bank"],
//	     "score": 42, "allowed": 80},
//	    {"kind": "missing_value", "field": "amount", "legs": ["bank"],
//	     "message": "1 of 2 records have no number in \"amount\""},
//	    {"kind": "rule", "rule": "one_bank_record"}
//	  ],
//	  "failed_rules": ["one_bank_record"]                // [] when none
//	}
//
// Discrepancies come in field order (tolerance fields sorted by name, then the date key,
// then the description key), then rules in order; pairs of legs in leg order. A
// missing_leg group carries the discrepancies among its present legs too.
//
// An orphan row (Orphan):
//
//	{
//	  "schema_version": "svc.match-group.v1",
//	  "match_key":      "orphan:bank:3:1e45cff6a99c2fc4", // leg, index, first 16 hex digits of
//	                                                      // the SHA-256 of the record's canonical JSON
//	  "classification": "orphan",
//	  "leg":            "bank",
//	  "index":          3,
//	  "key":            "INV-9",                          // "" when the record has no key
//	  "reason":         "key_in_one_leg" | "missing_match_fields",
//	  "missing_fields": ["invoice"],                      // only for missing_match_fields
//	  "record":         {...}                             // the source record, unchanged
//	}
//
// Canonical JSON: object keys sorted bytewise, no whitespace, numbers in shortest form
// (1.0 is 1), strings with only the escapes JSON requires (no HTML escaping).
//
// An exception row (ExceptionRow), all text, one per non-full group and per orphan:
// run_id (empty here; the engine fills it), match_key, classification ("missing_leg",
// "variance" or "orphan"), missing_legs (comma-separated leg keys absent), discrepancy_fields
// (comma-separated fields outside tolerance, with "rule:<name>" for each false rule),
// details and status ("pending_review"). details is JSON of at most 8 KiB:
//
//	{"legs_present": [...], "missing_legs": [...],
//	 "rollups": {"<leg>": {"count": n, "sums": {"<field>": n}}},    // present legs
//	 "discrepancies": [...],                                        // as in the group row
//	 "failed_rules": [...],                                         // when any
//	 "leg": "bank", "index": 3, "reason": "...", "record": {...}}   // orphans
//
// Over 8 KiB the record is dropped first, then trailing discrepancies (then the roll-ups'
// sums), and the object says so with "truncated": true, "omitted_discrepancies" and
// "original_bytes" (and "sums_omitted": true); it stays valid JSON.
package match
