"""The demo agent's script: the reply to a conversation, as pure functions of its messages.

It exists so that `specengine run specs/` works on a fresh machine with no key and no network, and so
that the example specs can show every feature of the format against a real endpoint. The answers are
deterministic: the same messages always give the same reply and tool calls. The script knows no
HTTP (demo/server.py serves it), so the behaviour the example specs rely on is tested without a socket.

The agent has these tools, which it runs "server-side" like most agents under evaluation do: each
reply reports the calls (so specs can check them) beside the final answer.
- get_weather(city, unit?): a fixed table (Paris, London, Oslo, Tokyo); any other city is unknown.
- book_table(restaurant, people, time, preferences?): always succeeds; `preferences` is a nested
  object (`seating`, `occasion`, `dietary` list) so specs can show nested `called_tool_with` args.
- find_order(item) and refund(order_id, amount, items, reason, note, request_id): the customer's
  orders (demo/orders.py), with generated ids and computed amounts for argument matchers.

Chat completions are stateless: the agent rebuilds its state (the booking, the last city, the
user's name) by replaying every user message of the request, so multi-turn specs work exactly when
the client resends the history, and a new conversation (after `reset`) knows nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specengine.demo.orders import answer_order, wants_order

DEFAULT_RESTAURANT = "Chez Demo"
MAX_PEOPLE = 20

# city key -> (name, condition, temperature in °C)
WEATHER: dict[str, tuple[str, str, int]] = {
    "paris": ("Paris", "Sunny", 24),
    "london": ("London", "Rainy", 14),
    "oslo": ("Oslo", "Snowy", -3),
    "tokyo": ("Tokyo", "Cloudy", 18),
}

CAPABILITIES = "I can tell you the weather in Paris, London, Oslo or Tokyo, and book a table at a restaurant."
REFUSAL = "Sorry, I can't help with that. " + CAPABILITIES.replace("I can", "I can only", 1)


@dataclass(frozen=True)
class AgentCall:
    """A tool call the agent made: tool name and its arguments."""

    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class AgentReply:
    """What the agent answers to the latest user message."""

    content: str
    tool_calls: tuple[AgentCall, ...] = ()


@dataclass
class _State:
    """What the agent remembers while it replays a conversation (mutable, private to one request)."""

    always_json: bool = False
    booking: dict[str, Any] | None = None  # the last confirmed booking (book_table arguments)
    pending: dict[str, Any] | None = None  # a booking still missing people or time
    topic: str | None = None  # "weather", "booking" or "order": what the last answer was about
    city: str | None = None
    name: str | None = None
    earlier: list[str] = field(default_factory=list)


def respond(messages: Sequence[Mapping[str, Any]]) -> AgentReply:
    """The reply to the last user message, given the whole conversation so far."""
    system = " ".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    if not users:
        return AgentReply("Please send a user message. " + CAPABILITIES)
    state = _State(always_json=bool(re.search(r"\bjson\b", system, re.I)))
    reply = AgentReply("")
    for text in users:
        reply = _answer(state, text)
        state.earlier.append(text)
    return reply


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": "..."}]
        return "".join(p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content)
    return str(content)


_MEMORY_QUESTION = re.compile(
    r"\bwhat (?:did|have) i (?:just )?(?:ask|asked|say|said)\b"
    r"|\b(?:my|the) (?:last|previous|earlier) (?:question|message)\b"
    r"|\bwhat was my (?:last |previous )?(?:question|message)\b",
    re.I,
)
_NAME_QUESTION = re.compile(r"\bwhat(?:'s|’s| is) my name\b|\bdo you (?:know|remember) my name\b", re.I)
_NAME_INTRO = re.compile(r"\b(?:my name is|call me)\s+([A-Za-z][\w'’-]*)", re.I)
_JSON_ASK = re.compile(r"\bjson\b", re.I)
_BOOKING_WORDS = re.compile(r"\b(?:book|booking|reserve|reservation|table)\b", re.I)
_WEATHER_WORDS = re.compile(
    r"\b(?:weather|temperature|forecast|rain|raining|rainy|sunny|snow|snowing|snowy|cloudy|degrees"
    r"|umbrella|cold|hot|warm)\b",
    re.I,
)
_FOLLOW_UP = re.compile(r"^\W*(?:and|what about|how about)\b", re.I)
_GREETING = re.compile(r"^\W*(?:hi|hello|hey|greetings|good (?:morning|afternoon|evening))\b", re.I)
_THANKS = re.compile(r"\b(?:thanks|thank you|cheers)\b", re.I)
_HELP = re.compile(r"\b(?:help|what can you do|who are you)\b", re.I)


def _answer(state: _State, text: str) -> AgentReply:
    """Answer one user message and update what the agent remembers."""
    as_json = state.always_json or bool(_JSON_ASK.search(text))
    if not text.strip():
        return _plain("Please say something. " + CAPABILITIES, as_json)
    if _MEMORY_QUESTION.search(text):
        if state.earlier:
            return _plain(f'You asked: "{state.earlier[-1]}"', as_json)
        return _plain(
            "I don't know: this conversation has just started, so you haven't asked me anything yet.", as_json
        )
    if _NAME_QUESTION.search(text):
        if state.name:
            return _plain(f"Your name is {state.name}.", as_json)
        return _plain("I don't know your name yet.", as_json)
    intro = _NAME_INTRO.search(text)
    if intro:
        name = intro.group(1)
        state.name = name[:1].upper() + name[1:]
        return _plain(f"Nice to meet you, {state.name}! {CAPABILITIES}", as_json)
    if wants_order(text):
        content, calls = answer_order(text)
        state.topic = "order"
        shown = _dumps({"reply": content}) if as_json else content
        return AgentReply(shown, tuple(AgentCall(name, args) for name, args in calls))
    if _BOOKING_WORDS.search(text) or _amends_booking(state, text):
        return _book(state, text, as_json)
    if _asks_weather(state, text):
        return _weather(state, text, as_json)
    if _GREETING.search(text):
        hello = f"Hello, {state.name}!" if state.name else "Hello!"
        return _plain(f"{hello} I'm the demo agent. {CAPABILITIES}", as_json)
    if _THANKS.search(text):
        return _plain("You're welcome!", as_json)
    if _HELP.search(text):
        return _plain(f"I'm the demo agent. {CAPABILITIES}", as_json)
    return _plain(REFUSAL, as_json)


def _plain(content: str, as_json: bool) -> AgentReply:
    return AgentReply(_dumps({"reply": content}) if as_json else content)


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)


# --- weather ---------------------------------------------------------------------------------------

_CITY_AFTER = re.compile(r"\b(?:in|for|at|about)\s+([A-Za-z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*)")
_NOT_CITIES = {
    "fahrenheit", "celsius", "json", "today", "tomorrow", "general", "english", "the", "a", "it", "me",
    "now", "degrees", "weather", "there", "here", "this", "that", "you", "my", "your",
}  # fmt: skip


def _known_cities(text: str) -> list[str]:
    found = []
    for match in re.finditer(r"[A-Za-z]+", text):
        key = match.group(0).lower()
        if key in WEATHER and key not in found:
            found.append(key)
    return found


def _unit(text: str) -> str | None:
    if re.search(r"fahrenheit|°\s*f\b", text, re.I):
        return "fahrenheit"
    if re.search(r"celsius|°\s*c\b", text, re.I):
        return "celsius"
    return None


def _asks_weather(state: _State, text: str) -> bool:
    if _WEATHER_WORDS.search(text) or _known_cities(text):
        return True
    return state.topic == "weather" and bool(_FOLLOW_UP.search(text) or _unit(text))


def _weather(state: _State, text: str, as_json: bool) -> AgentReply:
    unit = _unit(text)
    cities = [WEATHER[key][0] for key in _known_cities(text)]
    if not cities:
        for match in _CITY_AFTER.finditer(text):
            candidate = match.group(1).rstrip(".,!?;:'’")
            if candidate and candidate.lower() not in _NOT_CITIES:
                cities = [candidate.title() if candidate.islower() else candidate]
                break
    if not cities and state.city and (unit or _FOLLOW_UP.search(text)):
        cities = [state.city]
    if not cities:
        return _plain(
            "Which city would you like the weather for? I know Paris, London, Oslo and Tokyo.", as_json
        )
    state.topic, state.city = "weather", cities[-1]
    calls: list[AgentCall] = []
    sentences: list[str] = []
    records: list[dict[str, Any]] = []
    for city in cities:
        args: dict[str, Any] = {"city": city}
        if unit:
            args["unit"] = unit
        calls.append(AgentCall("get_weather", args))
        known = WEATHER.get(city.lower())
        if known is None:
            sentences.append(f"I don't know the weather in {city}.")
            records.append({"city": city, "error": "unknown city"})
            continue
        name, condition, celsius = known
        degrees = round(celsius * 9 / 5 + 32) if unit == "fahrenheit" else celsius
        symbol = "°F" if unit == "fahrenheit" else "°C"
        sentences.append(f"The weather in {name} is {condition}, {degrees}{symbol}.")
        records.append(
            {"city": name, "condition": condition, "temperature": degrees, "unit": unit or "celsius"}
        )
    if as_json:
        content = _dumps(records[0] if len(records) == 1 else {"cities": records})
    else:
        content = " ".join(sentences)
    return AgentReply(content, tuple(calls))


# --- bookings --------------------------------------------------------------------------------------

_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_NUM = r"(\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")"
_PEOPLE_PATTERNS = (
    re.compile(_NUM + r"\s+(?:people|persons|guests|diners|adults|of us|pax)\b", re.I),
    re.compile(r"\bparty of\s+" + _NUM + r"\b", re.I),
    re.compile(
        r"\b(?:for|make it|change it to)\s+" + _NUM + r"\b(?!\s*(?::|am\b|pm\b|a\.m|p\.m|o'clock))", re.I
    ),
)
_TIME_12H = re.compile(r"\b(\d{1,2})(?::([0-5]\d))?\s*([ap])\.?m\b", re.I)
_TIME_24H = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_TIME_BARE = re.compile(
    r"\b(?:at|move (?:it )?to)\s+(\d{1,2})\b(?!\s*(?:people|persons|guests|diners|pax|of us))", re.I
)
_RESTAURANT = re.compile(r"\b[Aa]t\s+((?:[A-Z][\w'’&-]*)(?:\s+(?:[A-Z][\w'’&-]*|de|du|la|le|of|the|di|da))*)")
_AMEND_WORDS = re.compile(r"\b(?:make it|change|instead|actually|move|update)\b", re.I)
_QUOTED = re.compile(r"[\"“]([^\"”]+)[\"”]")
_SEATING = (
    (re.compile(r"\b(?:outside|outdoors|terrace|patio)\b", re.I), "outside"),
    (re.compile(r"\bwindow\b", re.I), "window"),
    (re.compile(r"\b(?:inside|indoors)\b", re.I), "inside"),
)
_OCCASIONS = ("birthday", "anniversary")
_DIETS = (("vegan", r"\bvegan\b"), ("vegetarian", r"\bvegetarian\b"), ("gluten-free", r"\bgluten[- ]free\b"))


def _people(text: str) -> int | None:
    for pattern in _PEOPLE_PATTERNS:
        match = pattern.search(text)
        if match:
            word = match.group(1).lower()
            return _NUMBER_WORDS.get(word) or int(word)
    return None


def _time(text: str) -> str | None:
    match = _TIME_12H.search(text)
    if match:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        if 1 <= hour <= 12:
            hour = hour % 12 + (12 if match.group(3).lower() == "p" else 0)
            return f"{hour:02d}:{minute:02d}"
    match = _TIME_24H.search(text)
    if match:
        return f"{int(match.group(1)):02d}:{match.group(2)}"
    if re.search(r"\b(?:noon|midday)\b", text, re.I):
        return "12:00"
    match = _TIME_BARE.search(text)
    if match and 1 <= int(match.group(1)) <= 23:
        hour = int(match.group(1))
        return f"{hour + 12 if hour < 12 else hour:02d}:00"  # a bare "at 7" means the evening
    return None


def _restaurant(text: str) -> str | None:
    quoted = _QUOTED.search(text)
    if quoted:
        return quoted.group(1).strip()
    for match in _RESTAURANT.finditer(text):
        words = match.group(1).split()
        while words and words[-1].islower():
            words.pop()
        name = " ".join(words).rstrip(".,!?;:")
        if name and name.lower() not in WEATHER:
            return name
    return None


def _preferences(text: str) -> dict[str, Any]:
    preferences: dict[str, Any] = {}
    for pattern, seating in _SEATING:
        if pattern.search(text):
            preferences["seating"] = seating
            break
    for occasion in _OCCASIONS:
        if re.search(rf"\b{occasion}\b", text, re.I):
            preferences["occasion"] = occasion
            break
    diets = sorted(
        ((m.start(), diet) for diet, pattern in _DIETS for m in [re.search(pattern, text, re.I)] if m),
    )
    if diets:
        preferences["dietary"] = [diet for _, diet in diets]
    return preferences


def _booking_details(text: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    restaurant, people, when = _restaurant(text), _people(text), _time(text)
    if restaurant:
        details["restaurant"] = restaurant
    if people is not None:
        details["people"] = people
    if when:
        details["time"] = when
    preferences = _preferences(text)
    if preferences:
        details["preferences"] = preferences
    return details


def _amends_booking(state: _State, text: str) -> bool:
    """A message like "make it 4 people" changes the booking being discussed."""
    if state.booking is None and state.pending is None:
        return False
    if _WEATHER_WORDS.search(text) or _known_cities(text):
        return False
    return bool(_booking_details(text))


def _book(state: _State, text: str, as_json: bool) -> AgentReply:
    """Book a table, ask for what is missing, or change the booking being discussed."""
    details = _booking_details(text)
    amending = False
    if state.pending is not None:
        base = state.pending  # the answer to "for how many people?" / "at what time?"
    elif state.booking is not None and (not _BOOKING_WORDS.search(text) or _AMEND_WORDS.search(text)):
        base, amending = state.booking, True  # "make it 4 people", "change my booking to 8pm"
    else:
        base = {}
    booking = dict(base or {})
    preferences = {**booking.get("preferences", {}), **details.pop("preferences", {})}
    booking.update(details)
    if preferences:
        booking["preferences"] = preferences
    booking.setdefault("restaurant", DEFAULT_RESTAURANT)
    state.topic = "booking"
    people = booking.get("people")
    if people is not None and not 1 <= people <= MAX_PEOPLE:
        state.pending = None
        return _plain(f"Sorry, I can only book tables for 1 to {MAX_PEOPLE} people.", as_json)
    if people is None or "time" not in booking:
        state.pending = booking
        if people is None and "time" not in booking:
            question = (
                f"I can book a table at {booking['restaurant']}. For how many people, and at what time?"
            )
        elif people is None:
            question = f"For how many people should I book the table at {booking['time']}?"
        else:
            question = f"At what time should I book the table for {people}?"
        return _plain(question, as_json)
    args: dict[str, Any] = {
        key: booking[key] for key in ("restaurant", "people", "time", "preferences") if key in booking
    }
    state.booking, state.pending = args, None
    code = _confirmation(args)
    if as_json:
        content = _dumps({**args, "confirmation": code})
    else:
        notes = _notes(args.get("preferences", {}))
        table = f"a table for {args['people']} at {args['restaurant']} at {args['time']}{notes}"
        lead = f"Changed! Your booking is now {table}." if amending else f"Booked! I reserved {table}."
        content = f"{lead} Confirmation code: {code}."
    return AgentReply(content, (AgentCall("book_table", args),))


def _notes(preferences: Mapping[str, Any]) -> str:
    notes = []
    if "seating" in preferences:
        notes.append(f"{preferences['seating']} seating")
    if "occasion" in preferences:
        notes.append(f"for a {preferences['occasion']}")
    notes.extend(preferences.get("dietary", []))
    return f" ({', '.join(notes)})" if notes else ""


def _confirmation(args: Mapping[str, Any]) -> str:
    letters = re.sub(r"[^A-Z0-9]", "", str(args["restaurant"]).upper())[:6] or "TABLE"
    return f"{letters}-{str(args['time']).replace(':', '')}-{args['people']}"
