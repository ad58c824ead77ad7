"""Word lists the tool families and their requests draw from; written here, for this corpus.

``POOLS`` are the named lists a tool spec's ``text``, ``list`` and ``items`` values come from.
"""

from __future__ import annotations

__all__ = ["FIRST", "LAST", "COUNTRIES", "MONTHS", "MAIL_HOSTS", "UNIT_WORDS", "CURRENCY_WORDS", "POOLS"]


def _w(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(";") if x.strip())


FIRST = _w("Ana;Tom;Priya;Kofi;Lena;Mateo;Yuki;Omar;Sara;Jonas;Mei;Rafael;Ines;Dmitri;Amara;Lucas;Noor;Elif;Hugo;Zara;"
           "Felix;Aiko;Tariq;Maren;Diego;Chloe;Bram;Leila;Ivan;Nadia;Kwame;Sofia;Arjun;Greta;Malik;Hana;Pablo;Freya;Emeka;Lucia")
LAST = _w("Silva;Reed;Okafor;Berg;Tanaka;Haddad;Novak;Costa;Lindqvist;Mensah;Alvarez;Kowalski;Duarte;Fischer;Ibrahim;"
          "Moreau;Petrov;Nakamura;Osei;Larsen;Quinn;Romero;Sato;Walsh;Yilmaz;Abebe;Brandt;Castillo;Dubois;Eriksen")
COUNTRIES = _w("Portugal;Spain;France;Germany;Italy;Norway;Japan;Kenya;Ghana;Brazil;Chile;Peru;Canada;Mexico;India;"
               "Vietnam;Egypt;Morocco;Poland;Greece;Ireland;Iceland;Australia;New Zealand;Turkey;Nigeria;Colombia;Sweden;Austria;Thailand")
MONTHS = _w("January;February;March;April;May;June;July;August;September;October;November;December")
MAIL_HOSTS = _w("example.com;example.org;mail.test;corp.example;team.test")
CURRENCY_WORDS = {"USD": "dollars", "EUR": "euros", "GBP": "pounds", "JPY": "yen", "CHF": "francs"}
UNIT_WORDS: dict[str, tuple[str, ...]] = {
    "kg": ("kg", "kilograms", "kilos"), "g": ("g", "grams"), "lb": ("lb", "pounds"), "km": ("km", "kilometers", "kilometres"),
    "m": ("m", "meters", "metres"), "cm": ("cm", "centimeters"), "mi": ("miles",), "l": ("liters", "litres", "l"),
    "ml": ("ml", "milliliters"), "c": ("°C", "degrees Celsius", "degrees"), "h": ("hours", "h", "hrs"), "min": ("minutes", "min"),
    "s": ("seconds", "s", "secs"), "kwh": ("kWh", "kilowatt hours"), "mb": ("MB", "megabytes"), "gb": ("GB", "gigabytes"),
    "bpm": ("bpm", "beats per minute"), "mg": ("mg", "milligrams"), "mol": ("mol", "moles"), "k": ("K", "kelvin"),
    "atm": ("atm", "atmospheres"), "w": ("W", "watts"), "v": ("V", "volts"), "kmh": ("km/h", "kilometers per hour"),
    "deg": ("degrees", "°"), "px": ("px", "pixels"), "m2": ("square meters", "m2", "sq m"), "steps": ("steps",),
    "kcal": ("kcal", "calories"), "usd": ("dollars", "USD"), "pct": ("%", "percent"), "": ("",),
}

POOLS: dict[str, tuple[str, ...]] = {
    "countries": COUNTRIES,
    "nationalities": _w("Portuguese;Spanish;French;German;Italian;Norwegian;Japanese;Kenyan;Ghanaian;Brazilian;Chilean;Canadian;"
                        "Mexican;Indian;Egyptian;Polish;Greek;Irish;Australian;Turkish;Nigerian;Swedish"),
    "dishes": _w("lentil soup;mushroom risotto;chicken curry;banana bread;pad thai;shakshuka;apple crumble;falafel wraps;"
                 "beef stew;miso ramen;pumpkin pie;fish tacos;spinach lasagna;lemon tart;veggie chili"),
    "ingredients": _w("eggs;flour;milk;butter;garlic;onions;tomatoes;basil;rice;lentils;chickpeas;spinach;lemons;honey;ginger;"
                      "carrots;potatoes;yogurt;oats;cinnamon"),
    "cuisines": _w("Italian;Thai;Mexican;Japanese;Ethiopian;Greek;Indian;Lebanese;Korean;Peruvian"),
    "songs": _w("Blue Harbor;Midnight Ferry;Paper Lanterns;Golden Hour;Northern Lights;Slow River;Neon Rain;Cedar Smoke;"
                "Quiet Storm;Lemon Skies;Salt and Honey;Glass Garden"),
    "artists": _w("The Low Tides;Mara Vell;Kito Banda;Silver Pines;Juno Arc;The Paper Boats;Ravi Sen;Lumen Drive;Odette;Tall Grass"),
    "genres": _w("jazz;folk;techno;hip hop;classical;reggae;ambient;rock;soul;bossa nova"),
    "playlists": _w("Morning Run;Deep Focus;Road Trip;Sunday Chill;Dinner Party;Late Night"),
    "teams": _w("Harbor City Hawks;Riverside Rovers;North Valley Owls;Red Cliff United;Lakeside Lions;Eastgate Comets;"
                "Pine Ridge Bears;Coastal Sharks"),
    "sports": _w("football;basketball;tennis;cricket;rugby;volleyball;hockey;baseball"),
    "leagues": _w("Premier Division;Coastal League;Northern Cup;City Championship;Summer Series"),
    "tickers": _w("ACME;GLOBX;INITC;UMBRA;VANDL;HOOLI;STARK;WAYNE;TYREL;CYBDN"),
    "companies": _w("Acme Corp;Globex;Initech;Umbrella Labs;Vandelay Industries;Hooli;Stark Works;Wayne Foods;Tyrell Systems"),
    "products": _w("wireless mouse;desk lamp;water bottle;running shoes;yoga mat;coffee grinder;phone charger;backpack;"
                   "notebook;headphones;kettle;umbrella;sunglasses;teapot;bike helmet"),
    "groceries": _w("apples;bananas;bread;cheese;coffee;pasta;pears;figs;olive oil;tea;oranges;yogurt;cereal;peppers"),
    "stores": _w("Corner Market;Green Grocer;Tech Hub;Book Nook;Home Goods;City Pharmacy;Outdoor Depot"),
    "airlines": _w("SkyLark Air;Blue Jet;Northwind;Coral Airways;Atlas Wings"),
    "hotels": _w("Harbor View Inn;Old Town Suites;Grand Palm;Riverside Lodge;Maple House;Seabreeze Hotel"),
    "sights": _w("the old cathedral;the harbor market;the castle;the botanical garden;the science museum;the river walk"),
    "files": _w("report.pdf;budget.xlsx;notes.txt;photo.jpg;slides.pptx;data.csv;invoice.pdf;readme.md;backup.zip;todo.txt"),
    "filewords": _w("report;budget;notes;summary;invoice;draft;minutes;plan;export;results;inventory;roster"),
    "folders": _w("Documents;Downloads;Projects;Archive;Photos;Shared;Invoices;Drafts"),
    "events": _w("team standup;dentist appointment;project review;book club;yoga class;parent meeting;budget sync;birthday dinner"),
    "calendars": _w("Work;Personal;Family;Team;Sports"),
    "symptoms": _w("headache;fever;sore throat;cough;back pain;fatigue;nausea;dizziness;rash;runny nose"),
    "medicines": _w("ibuprofen;paracetamol;amoxicillin;cetirizine;omeprazole;metformin;loratadine"),
    "exercises": _w("squats;push-ups;lunges;planks;burpees;pull-ups;sit-ups;deadlifts"),
    "departments": _w("Engineering;Sales;Finance;Marketing;Support;Legal;Operations;Design"),
    "roles": _w("data analyst;product manager;backend engineer;designer;accountant;nurse;teacher;sales lead"),
    "skills": _w("Python;SQL;negotiation;design;accounting;Spanish;public speaking;project planning;cooking;first aid"),
    "devices": _w("living room lamp;kitchen light;bedroom fan;thermostat;front door lock;garage door;coffee machine;porch light"),
    "rooms": _w("kitchen;living room;bedroom;office;garage;hallway;bathroom;garden"),
    "compounds": _w("water;ethanol;glucose;sodium chloride;carbon dioxide;ammonia;methane;acetic acid;sulfuric acid;benzene"),
    "elements": _w("hydrogen;helium;carbon;nitrogen;oxygen;sodium;iron;copper;silver;gold;zinc;neon"),
    "shapes": _w("circle;square;triangle;rectangle;hexagon;ellipse;trapezoid;pentagon"),
    "solids": _w("sphere;cube;cylinder;cone;pyramid;prism"),
    "books": _w("The Glass Orchard;A River of Stars;Salt Road;The Last Lighthouse;Winter Bees;Quiet Machines;The Copper Fox"),
    "authors": _w("Lina Ortega;Samuel Achebe;Mira Holm;Jun Park;Clara Voss;Idris Bello;Hanne Lund"),
    "movies": _w("Night Harbor;The Paper Moon;Red Desert Run;Small Hours;The Long Tide;Iron Garden;Little Comets"),
    "languages": _w("French;Spanish;German;Japanese;Portuguese;Arabic;Hindi;Swahili;Korean;Italian"),
    "plants": _w("basil;tomato;rosemary;fern;orchid;succulent;lavender;mint;cactus;pepper plant"),
    "pets": _w("dog;cat;rabbit;parrot;hamster;turtle;goldfish;guinea pig"),
    "vehicles": _w("hatchback;SUV;electric scooter;van;motorbike;cargo bike;sedan"),
    "routes": _w("Line 4;Route 12;the Red Line;Express 9;the Harbor Ferry;Night Bus 3"),
    "courses": _w("Intro to Statistics;Organic Chemistry;World History;Linear Algebra;Creative Writing;Microeconomics"),
    "subjects": _w("math;physics;biology;history;chemistry;geography;music;art"),
    "repos": _w("api-gateway;web-client;data-pipeline;auth-service;docs-site;mobile-app"),
    "branches": _w("main;develop;release-2.1;feature/login;fix/timeout;staging"),
    "servers": _w("web-01;db-primary;cache-02;worker-3;edge-eu;batch-7"),
    "metrics": _w("cpu;memory;disk;latency;error_rate;requests"),
    "stars": _w("Sirius;Vega;Betelgeuse;Rigel;Polaris;Altair;Deneb;Arcturus;Capella;Antares"),
    "planets": _w("Mercury;Venus;Mars;Jupiter;Saturn;Uranus;Neptune"),
    "wines": _w("Rioja;Chianti;Malbec;Riesling;Sauvignon Blanc;Pinot Noir;Vinho Verde"),
    "charities": _w("Clean Rivers Fund;Open Library Trust;Food for All;Green Streets;Kids Code Club"),
    "venues": _w("Town Hall;Riverside Arena;Blue Note Club;Civic Theater;Harbor Pavilion;Old Mill"),
    "trails": _w("Eagle Ridge;Fern Gully Loop;Lakeshore Path;Summit Trail;Pine Hollow"),
    "colors": _w("red;navy;green;black;white;beige;teal;orange"),
    "sizes": _w("XS;S;M;L;XL"),
    "tasks": _w("renew passport;call the landlord;pay the water bill;book a haircut;fix the bike;send the invoice;water the plants"),
    "topics": _w("climate;elections;football;technology;space;health;markets;education"),
    "hashtags": _w("#travel;#food;#sunset;#running;#design;#books;#coffee;#music"),
    "accounts": _w("checking;savings;joint;business;travel fund"),
}
