package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/hosts/license"
)

// Environment of licensing.
const (
	envLicenseKey       = "SVC_LICENSE_KEY"
	envLicensePublicKey = "SVC_LICENSE_PUBLIC_KEY"
)

// licensePublicKeys reads SVC_LICENSE_PUBLIC_KEY: the current key, then during a rotation
// the keys before it ("new,old"); nil when unset.
func licensePublicKeys(v string) (current ed25519.PublicKey, previous []ed25519.PublicKey, err error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil, nil
	}
	for i, part := range strings.Split(v, ",") {
		k, err := license.DecodePublic(part)
		if err != nil {
			return nil, nil, fmt.Errorf("%s (key %d): %w", envLicensePublicKey, i+1, err)
		}
		if i == 0 {
			current = k
		} else {
			previous = append(previous, k)
		}
	}
	return current, previous, nil
}

// licenseCommand runs `svcflow license keygen|issue`.
func licenseCommand(args []string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "svcflow license:", err)
		return 2
	}
	if len(args) == 0 {
		return fail(errors.New("keygen or issue"))
	}
	switch args[0] {
	case "keygen":
		k, err := license.NewKey()
		if err != nil {
			return fail(err)
		}
		_ = json.NewEncoder(stdout).Encode(map[string]string{
			"private_key": license.EncodeKey(k), "public_key": license.EncodePublic(k.Public().(ed25519.PublicKey))})
		return 0
	case "issue":
		fs := flag.NewFlagSet("license issue", flag.ContinueOnError)
		fs.SetOutput(stderr)
		licensee := fs.String("licensee", "", "who the license is for")
		seats := fs.Int("seats", 0, "seats licensed")
		features := fs.String("features", "", "features, comma-separated")
		days := fs.Int("days", 365, "days from not-before to expiry")
		notBefore := fs.String("not-before", "", "RFC 3339 start (default now)")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		key, err := license.DecodeKey(os.Getenv(envLicenseKey))
		if err != nil {
			return fail(fmt.Errorf("%s: %w", envLicenseKey, err))
		}
		start := time.Now().UTC()
		if *notBefore != "" {
			if start, err = time.Parse(time.RFC3339, *notBefore); err != nil {
				return fail(fmt.Errorf("--not-before: %w", err))
			}
		}
		var fl []string
		for _, f := range strings.Split(*features, ",") {
			if f = strings.TrimSpace(f); f != "" {
				fl = append(fl, f)
			}
		}
		tok, err := license.Sign(license.License{ID: "lic_" + uuid.NewString(), Licensee: *licensee, Seats: *seats, Features: fl,
			NotBefore: start, ExpiresAt: start.AddDate(0, 0, *days), IssuedAt: time.Now()}, key)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, tok)
		return 0
	}
	return fail(fmt.Errorf("unknown subcommand %q: keygen or issue", args[0]))
}
