// Package gen makes seeded, realistic and noisy reconciliation data with known truth, for
// match's benchmarks and cmd/benchmatch: a ledger and a bank statement for the 2-way
// matcher, and ledger, bank and processor legs for the N-way matcher. The same profile and
// seed always give the same records.
package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Record is a JSON-shaped record, as match takes it.
type Record = map[string]any

// Profile is the mix of noise. Rates are fractions of ledger records.
type Profile struct {
	Seed uint64
	// Ledger is the number of ledger records (the left side).
	Ledger int
	// Counterparties is how many distinct counterparty ids (the matchOn key) there are:
	// fewer means more ledger records share a key and compete for the same bank records.
	Counterparties int
	// Tolerance and WindowDays are what the matcher is run with; noise "within" stays
	// inside them and noise "beyond" goes past them.
	Tolerance  float64
	WindowDays int

	Jitter          float64 // counterpart amount off by a little, within Tolerance
	BeyondTolerance float64 // counterpart amount off by more than Tolerance
	Drift           float64 // counterpart dated 1..WindowDays days later
	BeyondWindow    float64 // counterpart dated past the window
	Typo            float64 // a typo in one word of the bank description
	Reorder         float64 // bank description words shuffled
	Missing         float64 // no counterpart at all
	Duplicate       float64 // counterpart booked twice
	Split           float64 // paid in two bank records
	Recurring       float64 // a second invoice to the same counterparty, same amount, 7, 14 or 30 days later
	NearTwins       float64 // the same, a day or two later: only the invoice number tells them apart
	Unrelated       float64 // bank records with no ledger counterpart (fees, interest)
}

// Standard is the profile make bench-match reports on.
func Standard(seed uint64, ledger int) Profile {
	return Profile{
		Seed: seed, Ledger: ledger, Counterparties: max(1, ledger/8),
		Tolerance: 0.05, WindowDays: 3,
		Jitter: 0.15, BeyondTolerance: 0.02, Drift: 0.6, BeyondWindow: 0.01,
		Typo: 0.2, Reorder: 0.3, Missing: 0.03, Duplicate: 0.01, Split: 0.02,
		Recurring: 0.05, NearTwins: 0.003, Unrelated: 0.03,
	}
}

// TwoWay is a ledger (left) and a bank statement (right) with the truth: Origin[j] is the
// ledger index right record j should be matched to, or -1 when it should stay unmatched
// (no counterpart, or noise beyond the matcher's tolerance or window). A duplicated bank
// record has the same origin twice: either copy is a correct match.
type TwoWay struct {
	Left, Right []Record
	Origin      []int
	// Expected is the number of ledger records that should be matched.
	Expected int
}

// Score compares matched pairs (left index, right index) with the truth.
func (t *TwoWay) Score(pairs [][2]int) (correct int, precision, recall float64) {
	for _, p := range pairs {
		if t.Origin[p[1]] == p[0] {
			correct++
		}
	}
	precision, recall = 1, 1
	if len(pairs) > 0 {
		precision = float64(correct) / float64(len(pairs))
	}
	if t.Expected > 0 {
		recall = float64(correct) / float64(t.Expected)
	}
	return correct, precision, recall
}

type generator struct {
	p    Profile
	rng  *rand.Rand
	base time.Time
	cps  []counterparty
}

type counterparty struct {
	id, name string
}

var (
	prefixes = []string{"Acme", "Globex", "Initech", "Umbrella", "Hooli", "Soylent", "Wayne", "Stark", "Wonka",
		"Cyberdyne", "Tyrell", "Vandelay", "Gringotts", "Oscorp", "Nakatomi", "Monarch", "Pied Piper", "Aperture",
		"Massive Dynamic", "Bluth", "Dunder Mifflin", "Prestige", "Virtucon", "Gekko", "Kramerica", "Sterling"}
	suffixes = []string{"Corp", "Inc", "LLC", "Ltd", "GmbH", "Holdings", "Logistics", "Consulting", "Systems",
		"Foods", "Energy", "Labs", "Partners", "Supply", "Media"}
	purposes = []string{"office supplies", "consulting services", "software license", "cloud hosting",
		"freight charges", "maintenance contract", "marketing campaign", "catering", "equipment lease",
		"legal fees", "travel expenses", "printer toner", "security services", "insurance premium",
		"training course", "data subscription", "repair work", "packaging material"}
	bankPrefixes = []string{"", "", "PAYMENT ", "ACH ", "SEPA CT ", "WIRE ", "POS "}
	unrelated    = []string{"MONTHLY ACCOUNT FEE", "INTEREST CREDIT", "CARD FEE", "FX CONVERSION CHARGE",
		"CASH DEPOSIT", "OVERDRAFT INTEREST"}
)

func newGenerator(p Profile) *generator {
	g := &generator{p: p, rng: rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15)),
		base: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i := range max(1, p.Counterparties) {
		name := prefixes[g.rng.IntN(len(prefixes))] + " " + suffixes[g.rng.IntN(len(suffixes))]
		g.cps = append(g.cps, counterparty{id: fmt.Sprintf("CP-%06d", i), name: name})
	}
	return g
}

func (g *generator) amount() float64 {
	a := math.Exp(4.5 + 1.3*g.rng.NormFloat64())
	return math.Round(min(max(a, 1), 50000)*100) / 100
}

func (g *generator) date(offset int) string {
	return g.base.AddDate(0, 0, offset).Format(time.DateOnly)
}

func (g *generator) chance(rate float64) bool { return g.rng.Float64() < rate }

// bankText turns a ledger description into what a bank statement shows.
func (g *generator) bankText(inv, name, purpose string) string {
	words := strings.Fields(strings.ToUpper(name + " " + purpose))
	if g.chance(0.7) {
		words = append(words, "INV", inv)
	} else {
		words = append(words, "REF", inv)
	}
	if g.chance(g.p.Typo) {
		i := g.rng.IntN(len(words))
		words[i] = typo(g.rng, words[i])
	}
	if g.chance(g.p.Reorder) {
		g.rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	}
	return bankPrefixes[g.rng.IntN(len(bankPrefixes))] + strings.Join(words, " ")
}

// typo swaps, drops or replaces one letter of a word of three letters or more.
func typo(rng *rand.Rand, w string) string {
	if len(w) < 3 {
		return w
	}
	b := []byte(w)
	i := 1 + rng.IntN(len(b)-2)
	switch rng.IntN(3) {
	case 0:
		b[i], b[i+1] = b[i+1], b[i]
	case 1:
		b = append(b[:i], b[i+1:]...)
	default:
		b[i] = byte('A' + rng.IntN(26))
	}
	return string(b)
}

// NewTwoWay generates a ledger and a bank statement.
func NewTwoWay(p Profile) *TwoWay {
	g := newGenerator(p)
	t := &TwoWay{}
	addBank := func(rec Record, origin int) {
		t.Right = append(t.Right, rec)
		t.Origin = append(t.Origin, origin)
	}
	tolCents := int(math.Round(p.Tolerance * 100))
	for i := 0; len(t.Left) < p.Ledger; i++ {
		cp := g.cps[g.rng.IntN(len(g.cps))]
		amount := g.amount()
		day := g.rng.IntN(365)
		purpose := purposes[g.rng.IntN(len(purposes))]
		copies, interval := 1, 0
		switch {
		case g.chance(p.Recurring):
			copies, interval = 2, []int{7, 14, 30}[g.rng.IntN(3)]
		case g.chance(p.NearTwins):
			copies, interval = 2, 1+g.rng.IntN(2)
		}
		for c := range copies {
			if len(t.Left) == p.Ledger {
				break
			}
			li := len(t.Left)
			inv := fmt.Sprintf("%06d", 100000+li)
			d := day + c*interval
			t.Left = append(t.Left, Record{
				"id": fmt.Sprintf("L-%07d", li), "counterparty": cp.id, "amount": amount, "date": g.date(d),
				"description": fmt.Sprintf("Invoice %s %s %s", inv, cp.name, purpose),
			})
			switch {
			case g.chance(p.Missing):
				continue
			case g.chance(p.Split):
				first := math.Round(amount*0.6*100) / 100
				for _, part := range []float64{first, math.Round((amount-first)*100) / 100} {
					addBank(Record{"id": fmt.Sprintf("B-%07d", len(t.Right)), "counterparty": cp.id, "amount": part,
						"date": g.date(d + g.rng.IntN(p.WindowDays+1)), "description": g.bankText(inv, cp.name, purpose)}, -1)
				}
				continue
			}
			bankAmount, bankDay, origin := amount, d, li
			if g.chance(p.Jitter) && tolCents > 0 {
				cents := 1 + g.rng.IntN(tolCents)
				if g.chance(0.5) {
					cents = -cents
				}
				bankAmount = math.Round((amount+float64(cents)/100)*100) / 100
			}
			if g.chance(p.BeyondTolerance) {
				bankAmount = math.Round((amount+p.Tolerance+0.01+g.rng.Float64()*20)*100) / 100
				origin = -1
			}
			if g.chance(p.Drift) {
				bankDay += 1 + g.rng.IntN(max(1, p.WindowDays))
			}
			if g.chance(p.BeyondWindow) {
				bankDay = d + p.WindowDays + 2 + g.rng.IntN(20)
				origin = -1
			}
			rec := Record{"id": fmt.Sprintf("B-%07d", len(t.Right)), "counterparty": cp.id, "amount": bankAmount,
				"date": g.date(bankDay), "description": g.bankText(inv, cp.name, purpose)}
			addBank(rec, origin)
			if origin >= 0 {
				t.Expected++
			}
			if g.chance(p.Duplicate) {
				dup := Record{}
				for k, v := range rec {
					dup[k] = v
				}
				dup["id"] = fmt.Sprintf("B-%07d", len(t.Right))
				addBank(dup, origin)
			}
		}
	}
	for range int(float64(p.Ledger) * p.Unrelated) {
		cp := g.cps[g.rng.IntN(len(g.cps))]
		addBank(Record{"id": fmt.Sprintf("B-%07d", len(t.Right)), "counterparty": cp.id,
			"amount": math.Round(g.rng.Float64()*5000) / 100, "date": g.date(g.rng.IntN(365)),
			"description": unrelated[g.rng.IntN(len(unrelated))]}, -1)
	}
	// Bank statements are not in ledger order.
	perm := g.rng.Perm(len(t.Right))
	right, origin := make([]Record, len(t.Right)), make([]int, len(t.Right))
	for i, j := range perm {
		right[i], origin[i] = t.Right[j], t.Origin[j]
	}
	t.Right, t.Origin = right, origin
	return t
}

// NWaySet is three legs (ledger, bank, processor) keyed by invoice, with the truth: the
// classification each invoice key should get ("full", "variance", "missing_leg", or
// "orphan" for a key in one leg only).
type NWaySet struct {
	Ledger, Bank, Processor []Record
	Truth                   map[string]string
}

// NewNWay generates the legs. Splits (two bank payments) sum to the invoice and are full;
// a duplicated bank payment doubles the sum and is a variance, as a reviewer would want.
func NewNWay(p Profile) *NWaySet {
	g := newGenerator(p)
	s := &NWaySet{Truth: make(map[string]string, p.Ledger)}
	tolCents := int(math.Round(p.Tolerance * 100))
	for i := range p.Ledger {
		cp := g.cps[g.rng.IntN(len(g.cps))]
		inv := fmt.Sprintf("INV-%07d", i)
		amount := g.amount()
		d := g.rng.IntN(365)
		rec := func(amt float64, day int) Record {
			return Record{"invoice": inv, "counterparty": cp.id, "amount": amt, "date": g.date(day)}
		}
		truth := "full"
		legsPresent := 3
		s.Ledger = append(s.Ledger, rec(amount, d))
		// Processor: the gross amount, within tolerance, a day later at most.
		switch {
		case g.chance(p.Missing):
			legsPresent--
		default:
			amt := amount
			if g.chance(p.Jitter) && tolCents > 0 {
				amt = math.Round((amount+float64(1+g.rng.IntN(tolCents))/100)*100) / 100
			}
			s.Processor = append(s.Processor, rec(amt, d+g.rng.IntN(2)))
		}
		// Bank: one payment, a split, a duplicate, a wrong amount, or nothing.
		bankDay := d
		if g.chance(p.Drift) {
			bankDay += 1 + g.rng.IntN(max(1, p.WindowDays-1))
		}
		switch {
		case g.chance(p.Missing):
			legsPresent--
		case g.chance(p.Split):
			first := math.Round(amount*0.6*100) / 100
			s.Bank = append(s.Bank, rec(first, bankDay), rec(math.Round((amount-first)*100)/100, bankDay))
		case g.chance(p.Duplicate):
			s.Bank = append(s.Bank, rec(amount, bankDay), rec(amount, bankDay))
			truth = "variance"
		case g.chance(p.BeyondTolerance):
			s.Bank = append(s.Bank, rec(math.Round((amount+p.Tolerance+0.01+g.rng.Float64()*20)*100)/100, bankDay))
			truth = "variance"
		case g.chance(p.BeyondWindow):
			s.Bank = append(s.Bank, rec(amount, d+p.WindowDays+2+g.rng.IntN(20)))
			truth = "variance"
		default:
			s.Bank = append(s.Bank, rec(amount, bankDay))
		}
		switch legsPresent {
		case 2:
			truth = "missing_leg"
		case 1:
			truth = "orphan"
		}
		s.Truth[inv] = truth
	}
	for i := range int(float64(p.Ledger) * p.Unrelated) {
		inv := fmt.Sprintf("FEE-%07d", i)
		s.Bank = append(s.Bank, Record{"invoice": inv, "amount": math.Round(g.rng.Float64()*5000) / 100, "date": g.date(g.rng.IntN(365))})
		s.Truth[inv] = "orphan"
	}
	for _, leg := range [][]Record{s.Ledger, s.Bank, s.Processor} {
		g.rng.Shuffle(len(leg), func(i, j int) { leg[i], leg[j] = leg[j], leg[i] })
	}
	return s
}

// Synthetic makes n records per leg for the speed benchmarks: legs that agree on most
// keys, one exact key, an amount and a date.
func Synthetic(seed uint64, legs, n int) [][]Record {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	dates := make([]string, 400)
	for i := range dates {
		dates[i] = base.AddDate(0, 0, i).Format(time.DateOnly)
	}
	out := make([][]Record, legs)
	for l := range legs {
		recs := make([]Record, n)
		for i := range n {
			key := i
			if rng.IntN(50) == 0 {
				key = n + rng.IntN(n) // a key the other legs may not have
			}
			amount := float64(1000+(key*7919)%500000) / 100
			if rng.IntN(20) == 0 {
				amount += float64(rng.IntN(10)) / 100
			}
			recs[i] = Record{"key": fmt.Sprintf("K%08d", key), "amount": amount, "date": dates[(key%360)+rng.IntN(3)]}
		}
		rng.Shuffle(n, func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		out[l] = recs
	}
	return out
}
