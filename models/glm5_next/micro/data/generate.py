#!/usr/bin/env python3
"""Deterministic task data for GLM-5.3-Flash-micro (../shared/docs/accuracy.md section 2).

Every task is written as GSM8K JSON Lines, one {"question": ..., "answer": ...} object per line, the
answer's last line `#### N`, so one harness (strata-eval) scores all of them:

  gsm      GSM8K-format word problems: 24 templates, 2-4 steps of + - * and exact / on numbers up to
           MAX_VALUE (199), every step
           written `a*b = <<a*b=c>>c` like the real GSM8K solutions.
  recall   a price list of 40-80 "The <color> <object> costs $P." facts, then a question about one fact
           in the first half of the list: the answer lies hundreds of tokens back, far more than
           index_topk (64) tokens, so the sparse (DSA) indexer must select it.
  count    200-800 words drawn from four fruit names; how many times does one of them appear: a
           running count across many 64-token KDA chunks.
  copy     repeat a 5-40 digit number.
  reverse  write a 5-40 digit number backwards.

Train and test never share an instance: each instance has a key (task, template and every number or
choice that determines the answer, but not the names), and FNV-1a-64(key) % 10 == 0 puts it in test,
anything else in train. The test split holds distinct keys; train may repeat keys (more samples of the
same distribution) but never a test key, however many rows are generated (train.py streams them).

Randomness is splitmix64 (the generator of strata-eval's shot selection), not numpy or Python's
random, so the files are byte-identical on every Python and numpy version.

Usage:
  generate.py write OUT_DIR [--seed S]      write OUT_DIR/<task>/{train,test}.jsonl + MANIFEST.sha256
  generate.py check DIR                     format, arithmetic, re-solved answers, split disjointness
  generate.py prompts --data TEST --shots-data TRAIN [--shots K] [--seed S] [--limit N]
                                            GSM8K-shaped rows whose question is the rendered GLM
                                            few-shot chat prompt (exactly what strata-eval sends and
                                            runtime/tokenizer/glm_chat.cpp renders) and whose answer is
                                            the training completion; to stdout
  generate.py stream TASK --split train|test --n N [--seed S]   N rows to stdout (for train.py)
  generate.py check-shots EVAL_OUTPUT --pool-size N [--shots K] [--seed S]
                                            the shot ids strata-eval recorded (--output) are the
                                            ones `prompts` renders
"""

import argparse
import hashlib
import json
import os
import re
import sys

DEFAULT_SEED = 20261201
MASK64 = (1 << 64) - 1

# Row counts of the committed files: GSM test matches real GSM8K's 1319.
SPLIT_SIZES = {
    "gsm": {"train": 2000, "test": 1319},
    "recall": {"train": 100, "test": 200},
    "count": {"train": 100, "test": 200},
    "copy": {"train": 100, "test": 200},
    "reverse": {"train": 100, "test": 200},
}
TASKS = list(SPLIT_SIZES)
# Difficulty of the word problems: every operand and result of every step is at most MAX_VALUE.
# The first training run used 999 (three-digit arithmetic) and reached 0.536; a 9-layer, 256-wide
# model learns carries and borrows of numbers up to 199 in minutes (accuracy.md: "narrow the number
# ranges rather than growing the model").
MAX_VALUE = 199
TEST_MODULUS = 10


# ===--------------------------------------------------------------------=== #
# Randomness and hashing
# ===--------------------------------------------------------------------=== #

class Rng:
    """splitmix64; randint is modulo-reduced (tiny bias, irrelevant here, exactly reproducible)."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def randint(self, lo, hi):
        """Uniform-ish integer in [lo, hi]."""
        return lo + self.next() % (hi - lo + 1)

    def choice(self, items):
        return items[self.next() % len(items)]

    def sample(self, items, k):
        """k distinct items (partial Fisher-Yates)."""
        pool = list(items)
        for i in range(k):
            j = i + self.next() % (len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h


def split_of(key):
    """"test" or "train" for an instance key (a tuple of strings and ints)."""
    h = fnv1a64(repr(key).encode())
    return "test" if h % TEST_MODULUS == 0 else "train"


# ===--------------------------------------------------------------------=== #
# GSM8K-format word problems
# ===--------------------------------------------------------------------=== #

PEOPLE = [  # (name, subject pronoun, possessive)
    ("Ava", "she", "her"), ("Ben", "he", "his"), ("Chloe", "she", "her"), ("David", "he", "his"),
    ("Emma", "she", "her"), ("Felix", "he", "his"), ("Grace", "she", "her"), ("Henry", "he", "his"),
    ("Isla", "she", "her"), ("Jack", "he", "his"), ("Kate", "she", "her"), ("Liam", "he", "his"),
    ("Mia", "she", "her"), ("Noah", "he", "his"), ("Olivia", "she", "her"), ("Peter", "he", "his"),
    ("Rosa", "she", "her"), ("Sam", "he", "his"), ("Tina", "she", "her"), ("Victor", "he", "his"),
]
THINGS = ["apples", "marbles", "stickers", "cookies", "pencils", "books", "shells", "cards",
          "stamps", "balloons", "candies", "coins", "toys", "eggs", "flowers", "beads"]
ITEMS = [("notebook", "notebooks"), ("pen", "pens"), ("shirt", "shirts"), ("ticket", "tickets"),
         ("toy car", "toy cars"), ("cup", "cups"), ("plant", "plants"), ("hat", "hats"),
         ("ball", "balls"), ("lamp", "lamps"), ("bag", "bags"), ("puzzle", "puzzles")]
CONTAINERS = ["boxes", "bags", "baskets", "jars", "crates", "bowls"]
PLANTS = ["tomato plants", "roses", "trees", "sunflowers", "carrots", "tulips"]
JOBS = [("washes a car", "cars"), ("walks a dog", "dogs"), ("mows a lawn", "lawns"),
        ("babysits for an evening", "evenings"), ("bakes a cake", "cakes")]


class Solution:
    """Accumulates worked-solution lines with calculator annotations."""

    def __init__(self):
        self.lines = []

    @staticmethod
    def calc(a, op, b):
        if op == "+":
            c = a + b
        elif op == "-":
            c = a - b
        elif op == "*":
            c = a * b
        elif op == "/":
            if b == 0 or a % b:
                raise ValueError("inexact division")
            c = a // b
        else:
            raise ValueError(op)
        if c < 0:
            raise ValueError("negative intermediate")
        return c, f"{a}{op}{b} = <<{a}{op}{b}={c}>>{c}"

    def step(self, a, op, b, template):
        """Appends `template` with {} replaced by the annotated computation; returns the value."""
        c, text = self.calc(a, op, b)
        self.lines.append(template.format(text))
        return c

    def answer(self, final):
        return "\n".join(self.lines + [f"#### {final}"])


STEP = re.compile(r"<<(\d+)[-+*/](\d+)=(\d+)>>")


class Reject(Exception):
    """A sampled instance violates a template's constraints; draw again."""


def _person(r, *exclude):
    while True:
        p = r.choice(PEOPLE)
        if p[0] not in exclude:
            return p


def _cap(s):
    return s[0].upper() + s[1:]


def t_change(r):
    (n, he, _), (item, items) = _person(r), r.choice(ITEMS)
    a, p = r.randint(2, 12), r.randint(2, 45)
    bill = next((b for b in (20, 50, 100, 200, 500, 1000) if b > a * p), None)
    if bill is None:
        raise Reject
    s = Solution()
    cost = s.step(a, "*", p, f"The {items} cost {{}} dollars.")
    left = s.step(bill, "-", cost, f"{_cap(he)} gets {{}} dollars back.")
    q = (f"{n} buys {a} {items} for ${p} each and pays with a ${bill} bill. "
         f"How much change does {he} get?")
    return (a, p, bill), q, s.answer(left)


def t_half(r):
    (n, he, _), thing = _person(r), r.choice(THINGS)
    a = 2 * r.randint(6, 66)
    s = Solution()
    may = s.step(a, "/", 2, f"In May {n} sold {{}} {thing}.")
    tot = s.step(a, "+", may, f"Altogether {he} sold {{}} {thing}.")
    q = (f"{n} sold {a} {thing} in April, and then {he} sold half as many {thing} in May. "
         f"How many {thing} did {n} sell altogether in April and May?")
    return (a,), q, s.answer(tot)


def t_times_fewer(r):
    (a_n, _, _) = _person(r)
    (b_n, _, _) = _person(r, a_n)
    (c_n, _, _) = _person(r, a_n, b_n)
    thing = r.choice(THINGS)
    a, k = r.randint(3, 60), r.randint(2, 5)
    d = r.randint(1, a * k - 1)
    s = Solution()
    b = s.step(a, "*", k, f"{b_n} has {{}} {thing}.")
    c = s.step(b, "-", d, f"{c_n} has {{}} {thing}.")
    ab = s.step(a, "+", b, f"{a_n} and {b_n} have {{}} {thing} together.")
    tot = s.step(ab, "+", c, f"All three have {{}} {thing}.")
    q = (f"{a_n} has {a} {thing}. {b_n} has {k} times as many {thing} as {a_n}. "
         f"{c_n} has {d} fewer {thing} than {b_n}. How many {thing} do they have altogether?")
    return (a, k, d), q, s.answer(tot)


def t_reading(r):
    (n, he, _) = _person(r)
    p, d, q_, e = r.randint(5, 60), r.randint(2, 14), r.randint(5, 60), r.randint(2, 14)
    s = Solution()
    x = s.step(p, "*", d, "First {} pages.")
    y = s.step(q_, "*", e, "Then {} pages.")
    tot = s.step(x, "+", y, f"{_cap(he)} reads {{}} pages in all.")
    q = (f"{n} reads {p} pages a day for {d} days, and then {q_} pages a day for {e} days. "
         f"How many pages does {n} read in all?")
    return (p, d, q_, e), q, s.answer(tot)


def t_boxes(r):
    (n, he, _), thing, box = _person(r), r.choice(THINGS), r.choice(CONTAINERS)
    k, per = r.randint(2, 12), r.randint(2, 30)
    g = r.randint(1, k - 1)
    total = k * per
    s = Solution()
    each = s.step(total, "/", k, f"Each of the {box} holds {{}} {thing}.")
    kept = s.step(k, "-", g, f"{_cap(he)} keeps {{}} {box}.")
    left = s.step(kept, "*", each, f"That is {{}} {thing}.")
    q = (f"{n} has {total} {thing} and puts them equally into {k} {box}. {_cap(he)} gives away {g} "
         f"of the {box}. How many {thing} does {n} have left?")
    return (total, k, g), q, s.answer(left)


def t_savings(r):
    (n, he, _) = _person(r)
    w, h = r.randint(8, 30), r.randint(5, 40)
    spend = r.randint(10, w * h - 1)
    weeks = r.randint(2, 8)
    s = Solution()
    pay = s.step(w, "*", h, f"{n} earns {{}} dollars a week.")
    save = s.step(pay, "-", spend, f"{_cap(he)} saves {{}} dollars a week.")
    tot = s.step(save, "*", weeks, f"In {weeks} weeks {he} saves {{}} dollars.")
    q = (f"{n} earns ${w} an hour and works {h} hours a week. {_cap(he)} spends ${spend} a week on "
         f"food. How much money does {he} save in {weeks} weeks?")
    return (w, h, spend, weeks), q, s.answer(tot)


def t_minutes(r):
    (n, he, _) = _person(r)
    h, m, m2 = r.randint(1, 2), r.randint(5, 55), r.randint(5, 55)
    s = Solution()
    hm = s.step(h, "*", 60, f"{h} hours are {{}} minutes.")
    day = s.step(hm, "+", m, f"On Monday {he} practices {{}} minutes.")
    tot = s.step(day, "+", m2, f"On both days {he} practices {{}} minutes.")
    hours = "hour" if h == 1 else "hours"
    q = (f"{n} practices the piano for {h} {hours} and {m} minutes on Monday and for {m2} minutes "
         f"on Tuesday. How many minutes does {he} practice on both days?")
    return (h, m, m2), q, s.answer(tot)


def t_percent(r):
    (item, items) = r.choice(ITEMS)
    pc = r.choice([10, 20, 25, 50])
    p = 10 * r.randint(1, 19)
    part = 100 // pc
    if p % part:
        raise Reject
    s = Solution()
    off = s.step(p, "/", part, f"{pc}% of {p} is {{}} dollars.")
    price = s.step(p, "-", off, f"The {item} costs {{}} dollars.")
    q = (f"A {item} costs ${p}. It is on sale for {pc}% off. How much does the {item} cost "
         f"on sale?")
    return (p, pc), q, s.answer(price)


def t_give_buy(r):
    (n, he, _) = _person(r)
    (b_n, _, _) = _person(r, n)
    (c_n, _, _) = _person(r, n, b_n)
    thing = r.choice(THINGS)
    a = r.randint(20, 500)
    b, c = r.randint(1, a // 2), r.randint(1, a // 2)
    d = r.randint(1, 200)
    s = Solution()
    x = s.step(a, "-", b, f"After giving {b_n} some, {he} has {{}}.")
    y = s.step(x, "-", c, f"After giving {c_n} some, {he} has {{}}.")
    z = s.step(y, "+", d, "After buying more, {} has {{}}.".format(he))
    q = (f"{n} had {a} {thing}. {_cap(he)} gave {b} {thing} to {b_n} and {c} {thing} to {c_n}. "
         f"Then {he} bought {d} more {thing}. How many {thing} does {n} have now?")
    return (a, b, c, d), q, s.answer(z)


def t_ages(r):
    (a_n, _, _) = _person(r)
    (b_n, _, _) = _person(r, a_n)
    (c_n, _, _) = _person(r, a_n, b_n)
    a, d, k, y = r.randint(3, 40), r.randint(1, 20), r.randint(2, 3), r.randint(1, 15)
    mult = {2: "twice", 3: "three times"}[k]
    s = Solution()
    b = s.step(a, "+", d, f"{b_n} is {{}} years old.")
    c = s.step(b, "*", k, f"{c_n} is {{}} years old.")
    fut = s.step(c, "+", y, f"In {y} years {c_n} will be {{}} years old.")
    q = (f"{a_n} is {a} years old. {b_n} is {d} years older than {a_n}. {c_n} is {mult} as old as "
         f"{b_n}. How old will {c_n} be in {y} years?")
    return (a, d, k, y), q, s.answer(fut)


def t_packs(r):
    (n, he, _), thing = _person(r), r.choice(THINGS)
    p, k = r.randint(2, 20), r.randint(4, 24)
    u = r.randint(1, p * k - 1)
    s = Solution()
    tot = s.step(p, "*", k, f"{n} buys {{}} {thing}.")
    left = s.step(tot, "-", u, f"{_cap(he)} has {{}} {thing} left.")
    q = (f"{n} buys {p} packs of {thing} with {k} {thing} in each pack. {_cap(he)} uses {u} of "
         f"them. How many {thing} are left?")
    return (p, k, u), q, s.answer(left)


def t_share(r):
    (n, he, his), thing = _person(r), r.choice(THINGS)
    friends, per = r.randint(1, 9), r.randint(3, 40)
    e = r.randint(1, per - 1)
    k = friends + 1
    total = k * per
    s = Solution()
    people = s.step(friends, "+", 1, "There are {} people.")
    share = s.step(total, "/", people, "Each person gets {}.")
    left = s.step(share, "-", e, f"{n} has {{}} {thing} left.")
    q = (f"{n} and {friends} {'friend' if friends == 1 else 'friends'} share {total} {thing} "
         f"equally. {n} uses {e} of {his} {thing}. How many {thing} does {n} have left?")
    return (friends, total, e), q, s.answer(left)


def t_bakery(r):
    a, b = r.randint(5, 90), r.randint(5, 90)
    s = Solution()
    wd = s.step(a, "*", 5, "On weekdays the bakery makes {} cakes.")
    we = s.step(b, "*", 2, "On the weekend it makes {} cakes.")
    tot = s.step(wd, "+", we, "In one week it makes {} cakes.")
    q = (f"A bakery makes {a} cakes on each weekday and {b} cakes on each day of the weekend. "
         f"How many cakes does it make in one week?")
    return (a, b), q, s.answer(tot)


def t_garden(r):
    (n, he, _), plant = _person(r), r.choice(PLANTS)
    rows, per = r.randint(2, 15), r.randint(3, 25)
    dead = r.randint(1, rows * per - 1)
    more = r.randint(1, 9)
    s = Solution()
    tot = s.step(rows, "*", per, f"{n} plants {{}} {plant}.")
    alive = s.step(tot, "-", dead, "{} are still growing.")
    extra = s.step(more, "*", per, "The new rows have {}.")
    final = s.step(alive, "+", extra, f"{_cap(he)} has {{}} {plant} now.")
    q = (f"{n} plants {rows} rows of {per} {plant}. {dead} of them die. Then {he} plants {more} "
         f"more rows of {per}. How many {plant} does {n} have now?")
    return (rows, per, dead, more), q, s.answer(final)


def t_goal(r):
    (n, he, _), (job, jobs) = _person(r), r.choice(JOBS)
    w, times = r.randint(2, 25), r.randint(2, 40)
    saved = r.randint(1, 300)
    goal = saved + w * times
    s = Solution()
    need = s.step(goal, "-", saved, f"{_cap(he)} still needs {{}} dollars.")
    count = s.step(need, "/", w, f"That is {{}} {jobs}.")
    q = (f"{n} wants to buy a bike that costs ${goal}. {_cap(he)} has saved ${saved}. {_cap(he)} "
         f"earns ${w} each time {he} {job}. How many {jobs} does {he} need?")
    return (goal, saved, w), q, s.answer(count)


def t_shopping(r):
    (n, he, _) = _person(r)
    (i1, i1s), (i2, i2s) = r.sample(ITEMS, 2)
    a, p, b, q_ = r.randint(2, 12), r.randint(2, 40), r.randint(2, 12), r.randint(2, 40)
    s = Solution()
    x = s.step(a, "*", p, f"The {i1s} cost {{}} dollars.")
    y = s.step(b, "*", q_, f"The {i2s} cost {{}} dollars.")
    tot = s.step(x, "+", y, f"{_cap(he)} spends {{}} dollars.")
    q = (f"{n} buys {a} {i1s} for ${p} each and {b} {i2s} for ${q_} each. How much does {n} "
         f"spend?")
    return (i1, i2, a, p, b, q_), q, s.answer(tot)


def t_trip(r):
    v, h, w, g = r.randint(20, 70), r.randint(1, 9), r.randint(20, 70), r.randint(1, 9)
    s = Solution()
    x = s.step(v, "*", h, "First it drives {} miles.")
    y = s.step(w, "*", g, "Then it drives {} miles.")
    tot = s.step(x, "+", y, "It drives {} miles in all.")
    q = (f"A car drives at {v} miles per hour for {h} hours and then at {w} miles per hour for "
         f"{g} hours. How many miles does it drive?")
    return (v, h, w, g), q, s.answer(tot)


def t_stamps(r):
    (a_n, _, _) = _person(r)
    (b_n, _, _) = _person(r, a_n)
    a, n, b, m = r.randint(2, 30), r.randint(2, 20), r.randint(2, 30), r.randint(2, 20)
    if a * n <= b * m:
        raise Reject
    s = Solution()
    x = s.step(a, "*", n, f"{a_n} collects {{}} stamps.")
    y = s.step(b, "*", m, f"{b_n} collects {{}} stamps.")
    d = s.step(x, "-", y, f"{a_n} has {{}} more stamps.")
    q = (f"{a_n} collects {a} stamps a week for {n} weeks. {b_n} collects {b} stamps a week for "
         f"{m} weeks. How many more stamps does {a_n} have than {b_n}?")
    return (a, n, b, m), q, s.answer(d)


def t_average(r):
    (n, he, _) = _person(r)
    a, b = r.randint(5, 99), r.randint(5, 99)
    c = r.randint(5, 99)
    if (a + b + c) % 3:
        raise Reject
    s = Solution()
    x = s.step(a, "+", b, "The first two games give {} points.")
    y = s.step(x, "+", c, "All three give {} points.")
    avg = s.step(y, "/", 3, "The average is {} points.")
    q = (f"{n} scored {a}, {b} and {c} points in three games. What is {n}'s average score per "
         f"game?")
    return (a, b, c), q, s.answer(avg)


def t_class(r):
    k = r.choice([2, 3, 4, 5])
    per = r.randint(3, 12)
    n = k * per
    p = r.randint(2, 9)
    frac = {2: "half", 3: "a third", 4: "a quarter", 5: "a fifth"}[k]
    s = Solution()
    girls = s.step(n, "/", k, "There are {} girls.")
    boys = s.step(n, "-", girls, "There are {} boys.")
    pens = s.step(boys, "*", p, "The boys bring {} pencils.")
    q = (f"There are {n} students in a class, and {frac} of them are girls. Each boy brings {p} "
         f"pencils. How many pencils do the boys bring?")
    return (k, n, p), q, s.answer(pens)


def t_tickets(r):
    adult, child = r.randint(5, 30), r.randint(2, 20)
    a, c = r.randint(1, 9), r.randint(1, 9)
    paid = next((b for b in (100, 200, 500, 1000) if b >= adult * a + child * c), None)
    if paid is None:
        raise Reject
    s = Solution()
    x = s.step(adult, "*", a, "The adult tickets cost {} dollars.")
    y = s.step(child, "*", c, "The child tickets cost {} dollars.")
    tot = s.step(x, "+", y, "Together they cost {} dollars.")
    back = s.step(paid, "-", tot, "The change is {} dollars.")
    q = (f"Adult tickets cost ${adult} and child tickets cost ${child}. A family buys {a} adult "
         f"tickets and {c} child tickets and pays with ${paid}. How much change do they get?")
    return (adult, child, a, c, paid), q, s.answer(back)


def t_legs(r):
    (n, he, _) = _person(r)
    ch, cows = r.randint(1, 40), r.randint(1, 40)
    sp = r.randint(1, cows)
    s = Solution()
    x = s.step(ch, "*", 2, "The chickens have {} legs.")
    y = s.step(cows, "*", 4, "The cows have {} legs.")
    xy = s.step(x, "+", y, "Chickens and cows have {} legs.")
    tot = s.step(xy, "-", sp, "Without the lost legs there are {} legs.")
    q = (f"On {n}'s farm there are {ch} chickens and {cows} cows. {sp} of the cows have each lost "
         f"one leg. How many legs do the animals have in total?")
    return (ch, cows, sp), q, s.answer(tot)


def t_pizza(r):
    pizzas, slices, people = r.randint(2, 12), r.choice([6, 8, 10, 12]), r.randint(2, 12)
    if pizzas * slices % people:
        raise Reject
    s = Solution()
    tot = s.step(pizzas, "*", slices, "There are {} slices.")
    each = s.step(tot, "/", people, "Each person gets {} slices.")
    q = (f"A party orders {pizzas} pizzas cut into {slices} slices each. {people} people share "
         f"the slices equally. How many slices does each person get?")
    return (pizzas, slices, people), q, s.answer(each)


def t_shelves(r):
    (n, he, his) = _person(r)
    shelves, per, extra = r.randint(2, 10), r.randint(5, 40), r.randint(1, 50)
    lent = r.randint(1, shelves * per + extra - 1)
    s = Solution()
    x = s.step(shelves, "*", per, "The shelves hold {} books.")
    y = s.step(x, "+", extra, f"{n} has {{}} books.")
    z = s.step(y, "-", lent, f"{_cap(he)} keeps {{}} books.")
    q = (f"{n} has {shelves} shelves with {per} books on each, and {extra} more books on {his} "
         f"desk. {_cap(he)} lends {lent} books to friends. How many books does {n} keep?")
    return (shelves, per, extra, lent), q, s.answer(z)


GSM_TEMPLATES = [t_change, t_half, t_times_fewer, t_reading, t_boxes, t_savings, t_minutes,
                 t_percent, t_give_buy, t_ages, t_packs, t_share, t_bakery, t_garden, t_goal,
                 t_shopping, t_trip, t_stamps, t_average, t_class, t_tickets, t_legs, t_pizza,
                 t_shelves]


def gen_gsm(r):
    """One instance of a uniformly chosen template whose numbers all lie in [0, MAX_VALUE]: the
    template is drawn again until they do, so the template mix stays uniform."""
    t = r.choice(GSM_TEMPLATES)
    while True:
        try:
            numbers, q, a = t(r)
        except (Reject, ValueError):
            continue
        values = [int(v) for m in STEP.finditer(a) for v in m.groups()]
        if max(values) <= MAX_VALUE:
            return ("gsm", t.__name__) + tuple(numbers), q, a


# ===--------------------------------------------------------------------=== #
# Diagnostic tasks
# ===--------------------------------------------------------------------=== #

COLORS = ["red", "blue", "green", "yellow", "black", "white", "pink", "brown", "gray", "orange",
          "purple", "silver"]
OBJECTS = ["hammer", "kite", "lamp", "clock", "chair", "table", "radio", "camera", "basket",
           "mirror", "candle", "blanket", "kettle", "guitar", "pillow", "wallet", "jacket",
           "teapot", "ladder", "bucket"]
FRUITS = ["apple", "pear", "plum", "fig"]


def gen_recall(r):
    n = r.randint(40, 80)
    keys = r.sample([(c, o) for c in COLORS for o in OBJECTS], n)
    prices = [r.randint(10, 999) for _ in range(n)]
    target = r.randint(0, n // 2 - 1)  # first half: hundreds of tokens before the question
    c, o = keys[target]
    facts = "\n".join(f"The {kc} {ko} costs ${p}." for (kc, ko), p in zip(keys, prices))
    q = f"Here is a price list:\n{facts}\nHow much does the {c} {o} cost?"
    a = f"The {c} {o} costs ${prices[target]}.\n#### {prices[target]}"
    return ("recall", tuple(keys), tuple(prices), target), q, a


def gen_count(r):
    n = r.randint(200, 800)
    target = r.choice(FRUITS)
    c = r.randint(5, 40)
    others = [f for f in FRUITS if f != target]
    words = [r.choice(others) for _ in range(n)]
    for pos in r.sample(range(n), c):
        words[pos] = target
    q = (f"Here is a list of words: {' '.join(words)}.\nHow many times does the word {target} "
         f"appear in the list?")
    a = f"The word {target} appears {c} times.\n#### {c}"
    return ("count", target, tuple(words)), q, a


def _digits(r):
    return "".join(str(r.randint(0, 9)) for _ in range(r.randint(5, 40)))


def gen_copy(r):
    d = _digits(r)
    return ("copy", d), f"Copy this number: {d}", f"#### {d}"


def gen_reverse(r):
    d = _digits(r)
    return ("reverse", d), f"Write this number backwards: {d}", f"#### {d[::-1]}"


GENERATORS = {"gsm": gen_gsm, "recall": gen_recall, "count": gen_count, "copy": gen_copy,
              "reverse": gen_reverse}


def rows(task, split, n, seed=DEFAULT_SEED):
    """n rows of `task` in `split`; test rows have distinct keys."""
    # One independent stream per (task, split): the files do not shift when another task changes.
    r = Rng(seed ^ fnv1a64(f"{task}/{split}".encode()))
    seen, out = set(), []
    while len(out) < n:
        try:
            key, q, a = GENERATORS[task](r)
        except (Reject, ValueError):
            continue
        if split_of(key) != split or (split == "test" and key in seen):
            continue
        seen.add(key)
        out.append({"question": q, "answer": a})
    return out


def dump_row(row):
    # Same layout as GSM8K's own files: ", " / ": " separators, non-ASCII escaped.
    return json.dumps({"question": row["question"], "answer": row["answer"]})


# ===--------------------------------------------------------------------=== #
# Checkers
# ===--------------------------------------------------------------------=== #

ANNOTATION = re.compile(r"<<([^=<>]+)=([^<>]+)>>")
FINAL = re.compile(r"\n#### (\S+)\Z|\A#### (\S+)\Z")
EXPR = re.compile(r"\A(\d+)([-+*/])(\d+)\Z")


def final_answer(answer):
    """The N of the closing `#### N` line, or None."""
    m = FINAL.search(answer)
    return (m.group(1) or m.group(2)) if m else None


def check_annotations(answer):
    """Every <<a op b=c>> is exact integer arithmetic, echoed right after; returns the last c."""
    last = None
    for m in ANNOTATION.finditer(answer):
        e = EXPR.match(m.group(1))
        if not e:
            raise ValueError(f"annotation {m.group(0)!r} is not a binary integer operation")
        c, _ = Solution.calc(int(e.group(1)), e.group(2), int(e.group(3)))
        if str(c) != m.group(2):
            raise ValueError(f"annotation {m.group(0)!r}: {m.group(1)} is {c}")
        if not answer[m.end():].startswith(m.group(2)):
            raise ValueError(f"annotation {m.group(0)!r} is not followed by its value")
        last = c
    return last


def solve(task, question):
    """The answer of a diagnostic question, computed from the question text alone."""
    if task == "recall":
        m = re.search(r"How much does the (\w+) (\w+) cost\?\Z", question)
        prices = dict(((c, o), p) for c, o, p in
                      re.findall(r"^The (\w+) (\w+) costs \$(\d+)\.$", question, re.M))
        return prices[(m.group(1), m.group(2))]
    if task == "count":
        m = re.match(r"Here is a list of words: ([a-z ]+)\.\nHow many times does the word (\w+) ",
                     question)
        return str(m.group(1).split(" ").count(m.group(2)))
    if task == "copy":
        return re.fullmatch(r"Copy this number: (\d+)", question).group(1)
    if task == "reverse":
        return re.fullmatch(r"Write this number backwards: (\d+)", question).group(1)[::-1]
    raise ValueError(task)


def check_row(task, row):
    """Raises ValueError when a row is not well-formed GSM8K or its answer is wrong."""
    if set(row) != {"question", "answer"}:
        raise ValueError("keys must be exactly question and answer")
    q, a = row["question"], row["answer"]
    if a != a.strip() or q != q.strip():
        raise ValueError("surrounding whitespace")
    n = final_answer(a)
    if n is None or not re.fullmatch(r"\d+", n):
        raise ValueError("answer does not end with a `#### N` line")
    if task == "gsm":
        last = check_annotations(a)
        if last is None or str(last) != n:
            raise ValueError(f"final {n} is not the last computed value {last}")
    elif solve(task, q) != n:
        raise ValueError(f"final {n} is not the answer {solve(task, q)}")


def score(generation, gold_answer):
    """Exact match of a generation against a gold answer on the `#### N` value (strict-match)."""
    m = re.search(r"#### (\-?[0-9\.\,]+)", generation)
    return m is not None and m.group(1) == final_answer(gold_answer)


def check_dir(root):
    problems, counts = [], {}
    for task in TASKS:
        questions = {}
        for split in ("train", "test"):
            path = os.path.join(root, task, f"{split}.jsonl")
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
            if lines[-1] != "":
                problems.append(f"{path}: no final newline")
            for i, line in enumerate(lines[:-1]):
                row = json.loads(line)
                try:
                    check_row(task, row)
                except (ValueError, KeyError, AttributeError) as e:
                    problems.append(f"{path}:{i + 1}: {e}")
                else:
                    if not score(row["answer"], row["answer"]):
                        problems.append(f"{path}:{i + 1}: gold does not score against itself")
                questions.setdefault(split, set()).add(row["question"])
            counts[f"{task}/{split}"] = len(lines) - 1
        shared = questions["train"] & questions["test"]
        if shared:
            problems.append(f"{task}: {len(shared)} questions in both train and test")
    return counts, problems


# ===--------------------------------------------------------------------=== #
# Chat rendering (what strata-eval sends, rendered as runtime/tokenizer/glm_chat.cpp does)
# ===--------------------------------------------------------------------=== #

def choose_shots(pool_size, k, seed, test_index):
    """runtime/eval/gsm8k.cpp chooseShots: partial Fisher-Yates, splitmix64 seeded per item."""
    k = min(k, pool_size)
    idx = list(range(pool_size))
    r = Rng(seed ^ ((0xD1B54A32D192ED03 * (test_index + 1)) & MASK64))
    for i in range(k):
        j = i + r.next() % (pool_size - i)
        idx[i], idx[j] = idx[j], idx[i]
    return idx[:k]


def render_question(row):
    return f"Question: {row['question']}\nAnswer:"


def render_chat(shots, test):
    """GLM-4.6 template, thinking unset, add_generation_prompt: the prompt the server tokenizes."""
    out = "[gMASK]<sop>"
    for s in shots:
        out += "<|user|>\n" + render_question(s)
        out += "<|assistant|>\n<think></think>" + ("\n" + s["answer"].strip()
                                                  if s["answer"].strip() else "")
    return out + "<|user|>\n" + render_question(test) + "<|assistant|>"


def completion(row):
    """Training target after the final <|assistant|>: the rendering of the assistant turn, closed
    by <|user|> exactly like every shot (GLM's eos ids include <|user|>)."""
    return "\n<think></think>\n" + row["answer"].strip() + "<|user|>"


# ===--------------------------------------------------------------------=== #
# Command line
# ===--------------------------------------------------------------------=== #

def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_all(out, seed):
    manifest = []
    for task in TASKS:
        os.makedirs(os.path.join(out, task), exist_ok=True)
        for split in ("train", "test"):
            data = "".join(dump_row(row) + "\n"
                           for row in rows(task, split, SPLIT_SIZES[task][split], seed)).encode()
            name = f"{task}/{split}.jsonl"
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
            manifest.append(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
    with open(os.path.join(out, "MANIFEST.sha256"), "w") as f:
        f.write("".join(manifest))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out")
    w.add_argument("--seed", type=int, default=DEFAULT_SEED)
    c = sub.add_parser("check")
    c.add_argument("dir")
    pr = sub.add_parser("prompts")
    pr.add_argument("--data", required=True)
    pr.add_argument("--shots-data", required=True)
    pr.add_argument("--shots", type=int, default=5)
    pr.add_argument("--seed", type=int, default=1234)
    pr.add_argument("--limit", type=int, default=0)
    st = sub.add_parser("stream")
    st.add_argument("task", choices=TASKS)
    st.add_argument("--split", choices=["train", "test"], default="train")
    st.add_argument("--n", type=int, required=True)
    st.add_argument("--seed", type=int, default=DEFAULT_SEED)
    cs = sub.add_parser("check-shots")
    cs.add_argument("eval_output")
    cs.add_argument("--pool-size", type=int, required=True)
    cs.add_argument("--shots", type=int, default=5)
    cs.add_argument("--seed", type=int, default=1234)
    args = p.parse_args(argv)

    if args.cmd == "write":
        write_all(args.out, args.seed)
    elif args.cmd == "check":
        counts, problems = check_dir(args.dir)
        for line in problems[:20]:
            print(line)
        for name, n in counts.items():
            print(f"{name}: {n} rows")
        print(f"{len(problems)} problems")
        return 1 if problems else 0
    elif args.cmd == "prompts":
        test, pool = read_jsonl(args.data), read_jsonl(args.shots_data)
        n = min(len(test), args.limit) if args.limit else len(test)
        for i in range(n):
            shots = [pool[j] for j in choose_shots(len(pool), args.shots, args.seed, i)]
            sys.stdout.write(json.dumps({"question": render_chat(shots, test[i]),
                                         "answer": completion(test[i])}) + "\n")
    elif args.cmd == "check-shots":
        results = read_jsonl(args.eval_output)
        bad = [r["index"] for r in results
               if r["shots"] != choose_shots(args.pool_size, args.shots, args.seed, r["index"])]
        print(f"{len(results) - len(bad)} of {len(results)} shot selections match")
        return 1 if bad or not results else 0
    elif args.cmd == "stream":
        for row in rows(args.task, args.split, args.n, args.seed):
            sys.stdout.write(dump_row(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
