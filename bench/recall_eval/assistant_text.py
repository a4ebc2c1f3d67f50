"""What the user-and-assistant conversations talk about (assistant.py): the requests and long
answers that fill the sessions, and the facts a question is later asked about, as published
long-term-memory benchmarks of chat assistants classify them (LongMemEval: information the user
gave, what the assistant said, preferences stated in passing, knowledge that changed, when
something happened, and evidence spread over several sessions).

Each fact has `say` (the user's or the assistant's turn that holds it) and `q` (the question);
`update` facts have `old` and `new` (the later one is the answer); `multi` facts a `say` per
instance. Slots in braces are filled from `slots`. Written before any mode was run, not changed
after seeing results.
"""

# Topics of the chit-chat sessions: the user's request, then the assistant's long answer made of
# some of `lines` (long-term-memory benchmarks of assistants have answers of a few hundred words).
TOPICS = {
    "cooking": {
        "asks": [
            "Can you help me plan meals for the coming week?",
            "What can I make with leftover rice and a few vegetables?",
            "How do I keep bread from going stale so fast?",
        ],
        "lines": [
            "A good plan starts with two or three base ingredients you can reuse across meals.",
            "Cook a big batch of grains on Sunday and keep it in the fridge for up to four days.",
            "Roasted vegetables keep well and go into salads, wraps or pasta later in the week.",
            "Fried rice works best with rice that is a day old, because it has dried out a little.",
            "Add a splash of soy sauce and a beaten egg at the end for a quick and filling dinner.",
            "Store bread in a paper bag or a bread box rather than plastic, which traps moisture.",
            "Slices you will not eat within two days can go in the freezer and be toasted frozen.",
            "Soups and stews are forgiving, so they are a great way to use up what is left over.",
            "Keep a short list on the fridge of what needs using first, so nothing gets forgotten.",
            "Spices and fresh herbs make the same base taste different from one night to the next.",
            "If you cook for one, halve the recipes or freeze individual portions for busy days.",
            "Buying seasonal produce is usually cheaper and the flavour is noticeably better.",
        ],
    },
    "travel": {
        "asks": [
            "What should I pack for a long weekend away?",
            "How far ahead should I book train tickets to get a good price?",
            "Any tips for dealing with jet lag after a long flight?",
        ],
        "lines": [
            "Pack layers rather than bulky items, since the weather can change quickly.",
            "A small bag of toiletries kept ready to go saves time every single trip.",
            "Train fares are usually cheapest six to eight weeks before the date of travel.",
            "Booking a seat reservation separately can sometimes cost less than a flexible ticket.",
            "Try to get daylight in the morning at your destination to reset your body clock.",
            "Drink plenty of water on the flight and go easy on coffee and alcohol.",
            "Short naps of twenty minutes help, but a long nap in the afternoon makes it worse.",
            "Keep copies of your documents on your phone in case anything goes missing.",
            "Roll your clothes instead of folding them, they take less room and crease less.",
            "Check the local holidays before you go, some museums close on unexpected days.",
            "A reusable water bottle and a light scarf are worth bringing on almost every trip.",
            "Travel insurance is cheap compared with the cost of a cancelled booking.",
        ],
    },
    "fitness": {
        "asks": [
            "How should I structure a beginner strength routine?",
            "What is a good way to warm up before running?",
            "How many rest days do I need each week?",
        ],
        "lines": [
            "Three full body sessions a week is plenty when you are starting out.",
            "Focus on squats, push ups, rows and hinges before adding anything fancy.",
            "Add a little weight or a few repetitions each week so the body keeps adapting.",
            "A warm up of five minutes of brisk walking followed by leg swings works well.",
            "Dynamic stretches before exercise are better than holding long static stretches.",
            "Rest days matter because muscles repair and grow stronger between sessions.",
            "Sleep and protein intake affect recovery as much as the training itself does.",
            "If a joint hurts rather than the muscle, stop and check your form or rest.",
            "Keeping a simple log of sets and repetitions makes progress easy to see.",
            "Walking on rest days keeps you moving without adding much fatigue.",
            "Consistency over months beats any perfect plan followed for only two weeks.",
            "Cool down with easy movement and some gentle stretching after the session.",
        ],
    },
    "money": {
        "asks": [
            "How do I start building an emergency fund?",
            "Is it better to pay off debt or save first?",
            "What is a simple way to track monthly spending?",
        ],
        "lines": [
            "Aim first for one month of essential expenses, then build towards three to six.",
            "Automatic transfers on payday make saving happen without relying on willpower.",
            "High interest debt usually costs more than savings earn, so it often comes first.",
            "Keep a small buffer of savings even while paying debt, so surprises do not add more.",
            "A spreadsheet with a few categories is enough to see where the money goes.",
            "Review subscriptions every few months, small charges add up over a year.",
            "Separate accounts for bills and for spending make it harder to overspend.",
            "Writing down every purchase for one month is an eye opening exercise.",
            "Round numbers are fine, the goal is a rough picture rather than perfect accounts.",
            "Set one concrete goal with a date, it is far more motivating than a vague one.",
            "Compare the interest rates of savings accounts once a year and move if needed.",
            "Big purchases are easier to plan for with a small monthly amount set aside.",
        ],
    },
    "garden": {
        "asks": [
            "When should I plant tomatoes outside?",
            "How often should I water plants on a sunny balcony?",
            "What can I grow in a shady corner of the garden?",
        ],
        "lines": [
            "Wait until the risk of frost has passed and the nights stay above ten degrees.",
            "Harden seedlings off by putting them outside for a few hours a day for a week.",
            "Pots dry out much faster than beds, so check them every day in summer.",
            "Water in the early morning or evening so less is lost to evaporation.",
            "Push a finger into the soil, if the top few centimetres are dry it is time to water.",
            "Ferns, hostas and many herbs such as mint cope well with shade.",
            "Mulch keeps moisture in the soil and keeps weeds down at the same time.",
            "Feed fruiting plants every two weeks once the first flowers appear.",
            "Rotate where you grow each crop every year to keep the soil healthy.",
            "Companion planting with marigolds can help keep some pests away.",
            "Leafy greens tolerate less sun than fruiting crops like peppers and squash.",
            "A rain barrel saves water and plants generally prefer rain to tap water.",
        ],
    },
    "work": {
        "asks": [
            "How can I run shorter, more useful meetings?",
            "How do I ask my manager for more responsibility?",
            "Any advice for writing a clear status update?",
        ],
        "lines": [
            "Send an agenda before the meeting and end it when the agenda is done.",
            "Every meeting should end with owners and dates for each action item.",
            "Ask for responsibility by proposing a specific project you could lead.",
            "Show how the extra work connects to the team's goals for the quarter.",
            "A status update should lead with what changed and what needs a decision.",
            "Keep updates short, link to details rather than pasting them in full.",
            "Flag risks early, surprises late in a project damage trust more than delays.",
            "Standing meetings of fifteen minutes keep everyone focused on the essentials.",
            "Write down decisions where the whole team can find them afterwards.",
            "Regular one to one conversations are the right place for career questions.",
            "Block time in your calendar for deep work so meetings do not fill the week.",
            "Celebrate finished work, it keeps a team motivated through long projects.",
        ],
    },
    "reading": {
        "asks": [
            "How can I read more books this year?",
            "What is a good way to remember what I read?",
            "Should I keep reading a book I am not enjoying?",
        ],
        "lines": [
            "Carry a book or an e-reader everywhere so small gaps in the day become reading time.",
            "Twenty pages a day adds up to more than thirty books over a year.",
            "Short notes at the end of each chapter help a great deal with remembering.",
            "Explaining the main idea to a friend is one of the best ways to retain it.",
            "It is fine to stop a book that is not working for you, life is short.",
            "Audiobooks count, and they fit into commutes and chores nicely.",
            "Alternating fiction and non-fiction keeps reading from feeling like work.",
            "A reading group gives gentle deadlines and people to discuss ideas with.",
            "Keep a list of books you want to read so choosing the next one is easy.",
            "Reading before bed instead of scrolling often improves sleep as well.",
            "Libraries lend e-books too, which saves money on books you read only once.",
            "Highlighting less and writing more in the margins leads to better recall.",
        ],
    },
    "home": {
        "asks": [
            "How do I fix a door that keeps sticking?",
            "What is the best way to clean mould off bathroom grout?",
            "How can I make my flat warmer without raising the heating bill?",
        ],
        "lines": [
            "A sticking door often just needs its hinge screws tightened.",
            "If it still rubs, sand the edge lightly where the paint is worn.",
            "A paste of baking soda and water with an old toothbrush works on grout.",
            "Open a window after showers, mould grows where moisture lingers.",
            "Draught excluders on doors and windows make a surprising difference.",
            "Thick curtains closed at dusk keep the heat in overnight.",
            "Bleeding the radiators lets them heat evenly and use less energy.",
            "Rugs on bare floors help rooms feel warmer underfoot.",
            "Seal gaps around pipes with a little filler to stop cold air coming in.",
            "A smart thermostat lowers the heating when nobody is home.",
            "Check the seals on the fridge too, a poor seal wastes electricity.",
            "Most small repairs need only a screwdriver, pliers and some patience.",
        ],
    },
}

# The agent shape's work sessions: short requests and replies about the owner's projects.
WORK_ASKS = [
    "Can you check why the nightly build failed?",
    "Please update the dependency versions in the project file.",
    "Summarise the open issues for the release.",
    "Look at the logs from the staging server.",
    "Draft a reply to the client's email about the invoice.",
    "Rename the config option and update the docs.",
    "Find the slow query in the reports page.",
    "Write a test for the date parser.",
]
WORK_REPLIES = [
    "Done, the changes are on a new branch.",
    "I looked through it, nothing unusual so far.",
    "I opened a draft for you to review.",
    "All the tests pass now.",
    "I left a note in the issue with what I found.",
    "That should do it, let me know if anything looks off.",
]
WORK_TOOLS = [
    ("read_file", '{{"path": "src/{file}.py"}}'),
    ("run_command", '{{"command": "pytest tests/test_{file}.py"}}'),
    ("web_search", '{{"query": "{file} error message"}}'),
    ("grep", '{{"pattern": "{file}", "path": "src"}}'),
]
WORK_FILES = ["parser", "reports", "billing", "scheduler", "exporter", "auth", "cache", "mailer"]

USER_FACTS = [
    {
        "slots": {
            "child": ["Emma", "Noor", "Lily"],
            "school": ["Riverside Primary", "Oakwood Academy"],
        },
        "say": "By the way, my daughter {child} just started at {school}.",
        "q": "Which school did my daughter start at?",
    },
    {
        "slots": {"city": ["Singapore", "Toronto", "Berlin"]},
        "say": "I just got back from a conference in {city}, still jet-lagged.",
        "q": "Where was the conference I went to?",
    },
    {
        "slots": {"laptop": ["ThinkPad X1", "MacBook Air", "Dell XPS"]},
        "say": "My old laptop died so I got a {laptop} last week.",
        "q": "What computer did I buy to replace my old one?",
    },
    {
        "slots": {"sport": ["bouldering", "rowing", "yoga"]},
        "say": "I've been doing {sport} three times a week since January.",
        "q": "What sport have I been doing regularly?",
    },
    {
        "slots": {"pet": ["kitten", "puppy", "parrot"], "name": ["Miso", "Pickle", "Juno"]},
        "say": "Our landlord finally let us keep a {pet}, we named it {name}.",
        "q": "What did we name our {pet}?",
    },
    {
        "slots": {"language": ["Portuguese", "Korean", "Italian"]},
        "say": "I'm learning {language} with an app, twenty minutes every morning.",
        "q": "Which language am I studying?",
    },
    {
        "slots": {"tool": ["Linear", "Trello", "Asana"]},
        "say": "Our team moved from spreadsheets to {tool} this sprint.",
        "q": "Which tool does my team use for tracking work now?",
    },
    {
        "slots": {"course": ["pottery", "welding", "photography"]},
        "say": "I signed up for a {course} course at the community college.",
        "q": "What course did I sign up for at the community college?",
    },
    {
        "slots": {"debt": ["car loan", "student loan", "credit card balance"]},
        "say": "I finally paid off my {debt}, what a relief.",
        "q": "Which debt did I manage to clear?",
    },
    {
        "slots": {"place": ["food bank", "animal shelter", "public library"]},
        "say": "I volunteer at the {place} on weekends.",
        "q": "Where do I volunteer on weekends?",
    },
    {
        "slots": {"podcast": ["Hidden Brain", "Radiolab", "The Daily"]},
        "say": "My favourite podcast at the moment is {podcast}.",
        "q": "What podcast have I been enjoying lately?",
    },
    {
        "slots": {"allergy": ["peanuts", "shellfish", "penicillin"]},
        "say": "Just so you know, I'm allergic to {allergy}.",
        "q": "What am I allergic to?",
    },
]

PREFERENCES = [
    {
        "say": "I'm vegetarian, so please skip anything with meat.",
        "q": "What should I cook for dinner tonight, given my diet?",
    },
    {
        "say": "I hate flying, I'd much rather take the train whenever I can.",
        "q": "How should I get to my cousin's wedding, considering how I like to travel?",
    },
    {
        "say": "I only read on my e-reader these days, paper books strain my eyes.",
        "q": "In which format should I buy the next novel I read?",
    },
    {
        "say": "I prefer to exercise early in the morning before work.",
        "q": "At what time of day should I schedule my workouts?",
    },
    {
        "say": "I really dislike horror films, they give me nightmares.",
        "q": "Which movie should I watch this weekend, keeping my taste in mind?",
    },
    {
        "say": "I love spicy food, the hotter the better.",
        "q": "Which dishes would I enjoy at the new Thai restaurant?",
    },
    {
        "say": "I'm allergic to cat fur, so furry animals are a problem for me.",
        "q": "What kind of pet would suit me?",
    },
    {
        "say": "I'd rather keep my grocery spending under fifty dollars a week.",
        "q": "Can you help me plan a shopping list I can afford?",
    },
]

UPDATES = [
    {
        "slots": {"a": ["forty minutes", "an hour"], "b": ["ten minutes", "fifteen minutes"]},
        "old": "My commute is about {a} each way.",
        "new": "Since we moved, my commute is only {b}.",
        "q": "How long is my commute now?",
    },
    {
        "slots": {"book1": ["Dune", "Middlemarch"], "book2": ["Piranesi", "Circe"]},
        "old": "I'm currently reading {book1}, slowly.",
        "new": "I finished {book1} and started {book2}.",
        "q": "What book am I reading at the moment?",
    },
    {
        "slots": {"m1": ["Laura", "Kevin"], "m2": ["Priyanka", "Marcus"]},
        "old": "My manager {m1} wants the report by Friday.",
        "new": "{m2} replaced {m1} as my manager this month.",
        "q": "Who is my manager now?",
    },
    {
        "slots": {"k1": ["fifteen", "twenty"], "k2": ["thirty", "forty"]},
        "old": "I run about {k1} kilometres a week.",
        "new": "I've built up to {k2} kilometres a week now.",
        "q": "How many kilometres a week do I run these days?",
    },
    {
        "slots": {"bank1": ["Northbank", "Citywide"], "bank2": ["Ally", "Monzo"]},
        "old": "We keep our savings at {bank1}.",
        "new": "We moved our savings from {bank1} to {bank2}.",
        "q": "Which bank holds our savings now?",
    },
    {
        "slots": {"r1": ["1,200", "950"], "r2": ["1,350", "1,100"]},
        "old": "My rent is {r1} a month.",
        "new": "The landlord raised my rent to {r2} a month.",
        "q": "How much rent do I pay now?",
    },
]

# The user asks, the assistant's long answer holds the fact (one of its sentences).
ASSISTANT_FACTS = [
    {
        "slots": {
            "city": ["Lisbon", "Vienna", "Kyoto"],
            "hotel": ["the Casa Azul", "the Hotel Sacher", "the Ryokan Yoshida"],
        },
        "ask": "Can you recommend somewhere to stay for a weekend in {city}?",
        "say": "For {city} I'd suggest {hotel}, which is central and quiet at night.",
        "q": "Which hotel did you suggest for my weekend in {city}?",
    },
    {
        "slots": {
            "dish": ["lentil soup", "banana bread", "risotto"],
            "trick": ["a spoon of miso", "a pinch of cardamom", "a knob of cold butter"],
        },
        "ask": "How do I make my {dish} taste better?",
        "say": "The trick with {dish} is to add {trick} right at the end.",
        "q": "What did you tell me to add to my {dish}?",
    },
    {
        "slots": {
            "pain": ["lower back", "neck", "knee"],
            "stretch": ["cat-cow stretch", "chin tuck", "wall sit"],
        },
        "ask": "My {pain} has been aching, what can I do at home?",
        "say": "For the {pain}, the {stretch} done twice a day is a gentle place to start.",
        "q": "What exercise did you suggest for my {pain}?",
    },
    {
        "slots": {
            "subject": ["negotiation", "habits", "statistics"],
            "title": ["Never Split the Difference", "Atomic Habits", "The Art of Statistics"],
        },
        "ask": "Can you name a good book about {subject}?",
        "say": "On {subject}, {title} is readable and practical.",
        "q": "Which book about {subject} did you recommend?",
    },
    {
        "slots": {
            "goal": ["a new car", "a holiday in Japan", "a house deposit"],
            "amount": ["300 dollars", "450 dollars", "800 dollars"],
        },
        "ask": "How much should I put aside for {goal}?",
        "say": "For {goal}, setting aside about {amount} a month would get you there in two years.",
        "q": "How much did you say I should save each month for {goal}?",
    },
    {
        "slots": {
            "plant": ["basil", "lavender", "rosemary"],
            "spot": [
                "the south-facing windowsill",
                "the balcony railing",
                "a pot by the back door",
            ],
        },
        "ask": "Where should I keep my {plant}?",
        "say": "Your {plant} would do best on {spot}, where it gets the afternoon sun.",
        "q": "Where did you say I should put my {plant}?",
    },
]

# Something the user did, asked about by its date.
EVENTS = [
    {
        "slots": {"what": ["dentist", "eye doctor"]},
        "say": "I had my appointment with the {what} this morning.",
        "q": "When did I last see the {what}?",
    },
    {
        "slots": {"firm": ["Acme", "Globex", "Initech"]},
        "say": "I had the job interview at {firm} today, I think it went well.",
        "q": "When was my interview at {firm}?",
    },
    {
        "slots": {"car": ["car", "motorbike"]},
        "say": "The {car} went in for its service yesterday.",
        "q": "When was my {car} last serviced?",
    },
    {
        "slots": {"shot": ["flu shot", "tetanus booster"]},
        "say": "I got my {shot} at the pharmacy on the way home.",
        "q": "When did I get the {shot}?",
    },
    {
        "slots": {"team": ["team offsite", "quarterly review"]},
        "say": "We had the {team} today, long day.",
        "q": "When was the {team}?",
    },
]

# Instances told in several sessions; the question needs them all.
MULTI = [
    {
        "slots": {
            "item": ["a rose bush", "a watering can", "tomato seeds", "a compost bin", "a trowel"]
        },
        "say": "I bought {item} for the garden today.",
        "q": "What have I bought for the garden so far?",
    },
    {
        "slots": {
            "place": [
                "the Lebanese place on Main Street",
                "the new ramen bar",
                "a Georgian bakery",
                "the vegan diner",
            ]
        },
        "say": "We tried {place} for dinner, really good.",
        "q": "Which restaurants have we tried for dinner recently?",
    },
    {
        "slots": {
            "hike": ["the ridge trail", "the lake loop", "the old quarry path", "the coastal walk"]
        },
        "say": "We hiked {hike} on Saturday.",
        "q": "Which hikes have we done?",
    },
]
