package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"strings"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// The gateway's front door for a person with a browser: its root leads to the console,
// its icon answers (a browser asks for /favicon.ico on every page, and a 401 there reads
// as something broken), and a development process can make itself an account.

// registerFront serves / (a redirect to the console) and the icon.
func (s *Server) registerFront() {
	s.router.Get("/", func(w http.ResponseWriter, r *http.Request) {
		// A browser that opens the gateway's address lands on the console; an API client
		// that asks for / learns where the pages are from the Location.
		http.Redirect(w, r, "/console", http.StatusFound)
	})
	s.router.Get("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/x-icon")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(favicon)
	})
}

// favicon is a 32x32 icon (the accent's colour, a white dot in a ring): a PNG inside an
// ICO container, which every browser reads, drawn here rather than committed as a binary.
var favicon = func() []byte {
	const n = 32
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	accent := color.NRGBA{0x24, 0x57, 0xc5, 0xff}
	white := color.NRGBA{0xff, 0xff, 0xff, 0xff}
	for y := range n {
		for x := range n {
			dx, dy := float64(x)-15.5, float64(y)-15.5
			d := dx*dx + dy*dy
			switch {
			case d <= 4*4, d >= 9*9 && d <= 11.5*11.5:
				img.Set(x, y, white)
			case d <= 15.5*15.5:
				img.Set(x, y, accent)
			}
		}
	}
	var p bytes.Buffer
	_ = png.Encode(&p, img)
	var b bytes.Buffer
	// ICONDIR (reserved, type 1 = icon, one image), then the ICONDIRENTRY: width and height
	// 32, no palette, reserved, 1 plane, 32 bits, the PNG's size and its offset (6 + 16).
	_ = binary.Write(&b, binary.LittleEndian, []uint16{0, 1, 1})
	b.Write([]byte{n, n, 0, 0})
	_ = binary.Write(&b, binary.LittleEndian, []uint16{1, 32})
	_ = binary.Write(&b, binary.LittleEndian, []uint32{uint32(p.Len()), 22})
	b.Write(p.Bytes())
	return b.Bytes()
}()

// HasAccounts reports whether any account exists: serve tells a newcomer how to make the
// first one when none does.
func (s *Server) HasAccounts(ctx context.Context) (bool, error) {
	page, err := s.store.ListAccounts(ctx, svctype.ListOptions{Limit: 1})
	if err != nil {
		return false, err
	}
	return len(page.Items) > 0, nil
}

// The development account: serve --dev-token makes it, or gives it a new token when it
// exists, and gives it the organization DevOrgID when no other account has it.
const (
	devAccountID    = "acct_dev"
	DevAccountEmail = "dev@localhost"
	// DevOrgID is the organization of README's tour, so its runs show in the console.
	DevOrgID = "acme"
)

// DevToken makes the development account, or replaces its management token, and returns
// the token; ownsOrg is false when another account has DevOrgID. Only for a gateway on a
// loopback address (the caller checks): whoever reads the process's standard output holds
// the account.
func (s *Server) DevToken(ctx context.Context) (token string, ownsOrg bool, err error) {
	secret, shown, hash, err := newSecret(PrefixManagement)
	if err != nil {
		return "", false, err
	}
	now := s.now().UTC()
	a := &gwstore.Account{ID: devAccountID, Email: DevAccountEmail, Name: "Local development", Status: gwstore.AccountActive,
		TokenPrefix: shown, TokenHash: hash, CreatedAt: now, UpdatedAt: now}
	switch err := s.store.CreateAccount(ctx, a); {
	case errors.Is(err, gwstore.ErrConflict):
		if err := s.store.SetAccountToken(ctx, devAccountID, shown, hash, now); err != nil {
			return "", false, fmt.Errorf("the development account: %s is another account's email: %w", DevAccountEmail, err)
		}
	case err != nil:
		return "", false, err
	}
	org := &gwstore.GatewayOrg{ID: DevOrgID, AccountID: devAccountID, Name: "ACME (the README's tour)", CreatedAt: now}
	switch err := s.store.CreateGatewayOrg(ctx, org); {
	case errors.Is(err, gwstore.ErrConflict):
		if _, err := s.store.GetGatewayOrg(ctx, devAccountID, DevOrgID); err != nil {
			if errors.Is(err, gwstore.ErrNotFound) {
				return secret, false, nil
			}
			return "", false, err
		}
	case err != nil:
		return "", false, err
	}
	return secret, true, nil
}

// Loopback reports whether a listen address binds to loopback only ("127.0.0.1:8081",
// "[::1]:0", "localhost:8081"); an empty host ("":8081) listens on every interface.
func Loopback(addr string) bool {
	host := addr
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		host = addr[:i]
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
