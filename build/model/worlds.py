"""Entity lists and phrasings: one set for training, a disjoint one for the held-out eval.

Nothing here is shared between the two worlds: the eval's cities, note texts, request
phrasings, out-of-scope requests and fillers are its own lists (``check_disjoint`` asserts
it), and its numbers and expressions come from a different slice of a hash split
(``corpus.held_out``). Unit names are a closed vocabulary and are the same in both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["World", "TRAIN", "EVAL", "UNIT_WORDS", "check_disjoint"]


@dataclass(frozen=True)
class World:
    name: str
    cities: tuple[str, ...]
    weather: tuple[str, ...]
    umbrella: tuple[str, ...]  # weather requests that ask whether to take an umbrella
    time: tuple[str, ...]
    two_weather: tuple[str, ...]
    two_time: tuple[str, ...]
    weather_time: tuple[str, ...]  # {a}'s weather, {b}'s time
    time_weather: tuple[str, ...]  # {a}'s time, {b}'s weather
    fahrenheit: tuple[str, ...]  # weather, then its temperature converted to Fahrenheit
    convert: tuple[str, ...]
    calculate: tuple[str, ...]
    note: tuple[str, ...]  # {note} is a task ("buy milk")
    note_fact: tuple[str, ...]  # {note} is a statement ("the code is 4411")
    note_verbs: tuple[str, ...]
    note_objects: tuple[str, ...]
    note_when: tuple[str, ...]
    note_facts: tuple[str, ...]
    greetings: tuple[str, ...]
    thanks: tuple[str, ...]
    about: tuple[str, ...]
    other: tuple[str, ...]  # requests no tool can serve ({city} may appear)
    prefixes: tuple[str, ...]
    suffixes: tuple[str, ...]


# Surface forms of each unit. The first is the symbol; forms starting with "°" attach to the number.
UNIT_WORDS: dict[str, tuple[str, ...]] = {
    "km": ("km", "kilometers", "kilometres", "kilometer"),
    "mi": ("mi", "miles", "mile"),
    "m": ("m", "meters", "metres", "meter"),
    "ft": ("ft", "feet", "foot"),
    "cm": ("cm", "centimeters", "centimetres"),
    "in": ("in", "inches", "inch"),
    "kg": ("kg", "kilograms", "kilos", "kilogram"),
    "lb": ("lb", "lbs", "pounds", "pound"),
    "g": ("g", "grams", "gram"),
    "oz": ("oz", "ounces", "ounce"),
    "l": ("l", "liters", "litres", "liter"),
    "gal": ("gal", "gallons", "gallon"),
    "c": ("°C", "C", "Celsius", "degrees Celsius"),
    "f": ("°F", "F", "Fahrenheit", "degrees Fahrenheit"),
}

_TRAIN_CITIES = """
Lisbon Porto Paris Oslo Rome Madrid Berlin Vienna Prague Warsaw Budapest Athens Dublin London
Edinburgh Glasgow Manchester Liverpool Bristol Cardiff Belfast Amsterdam Rotterdam Brussels Antwerp
Luxembourg Zurich Geneva Bern Basel Milan Turin Naples Florence Venice Bologna Genoa Palermo Seville
Valencia Barcelona Bilbao Malaga Granada Marseille Lyon Nice Toulouse Bordeaux Lille Nantes Strasbourg
Hamburg Munich Cologne Frankfurt Stuttgart Dresden Leipzig Hanover Bremen Copenhagen Aarhus Stockholm
Gothenburg Malmo Helsinki Tampere Reykjavik Tallinn Riga Vilnius Minsk Kyiv Lviv Odesa Bucharest Sofia
Belgrade Zagreb Ljubljana Sarajevo Skopje Tirana Podgorica Chisinau Istanbul Ankara Izmir Tbilisi Yerevan
Baku Tehran Baghdad Beirut Amman Jerusalem Cairo Alexandria Tunis Algiers Casablanca Marrakesh Rabat
Dakar Accra Lagos Abuja Nairobi Mombasa Kampala Kigali Addis Ababa Khartoum Luanda Harare Lusaka
Johannesburg Durban Windhoek Gaborone Maputo Antananarivo Dubai Doha Riyadh Jeddah Muscat Kuwait
Karachi Lahore Islamabad Delhi Mumbai Kolkata Chennai Bangalore Hyderabad Pune Jaipur Kathmandu Dhaka
Colombo Yangon Bangkok Hanoi Saigon Phnom Penh Vientiane Manila Cebu Jakarta Surabaya Bali Singapore
Penang Beijing Shanghai Guangzhou Shenzhen Chengdu Wuhan Xian Hangzhou Nanjing Tianjin Harbin Hong Kong
Macau Taipei Kaohsiung Seoul Busan Incheon Tokyo Osaka Kyoto Nagoya Sapporo Fukuoka Kobe Yokohama
Hiroshima Sendai Ulaanbaatar Almaty Tashkent Bishkek Sydney Melbourne Brisbane Perth Adelaide Hobart
Darwin Canberra Auckland Wellington Christchurch Queenstown Suva Honolulu Anchorage Vancouver Victoria
Calgary Edmonton Winnipeg Toronto Ottawa Montreal Quebec Halifax Seattle Portland Boise Denver Phoenix
Tucson Las Vegas Los Angeles San Diego San Francisco Sacramento Fresno Salt Lake City Albuquerque Dallas
Houston Austin El Paso Oklahoma City Kansas City Omaha Minneapolis Chicago Detroit Cleveland Columbus
Cincinnati Indianapolis Milwaukee St. Louis Memphis Nashville Atlanta Miami Orlando Tampa Charlotte
Raleigh Richmond Baltimore Philadelphia Pittsburgh New York Boston Buffalo Hartford Providence
New Orleans Mexico City Guadalajara Monterrey Cancun Havana Kingston Santo Domingo San Juan Panama City
Bogota Medellin Caracas Quito Guayaquil Lima Cusco La Paz Santiago Valparaiso Buenos Aires Cordoba
Montevideo Asuncion Rio de Janeiro Sao Paulo Brasilia Salvador Recife Fortaleza Manaus Belem Curitiba
São Luís Zürich Kraków Gdańsk Malmö Köln Düsseldorf Málaga Córdoba Bogotá Medellín Asunción Québec
Montréal Ålesund Tromsø Århus Reims Dijon Avignon Cannes Siena Verona Pisa Trieste Salzburg Graz Linz
Innsbruck Brno Ostrava Bratislava Kosice Debrecen Szeged Cluj Iasi Varna Plovdiv Split Dubrovnik Zadar
Thessaloniki Heraklion Nicosia Valletta Bergen Trondheim Stavanger Uppsala Turku Oulu Tartu Kaunas Gdansk
Poznan Wroclaw Lodz Krakow Lublin Leeds Sheffield Newcastle Nottingham Oxford Cambridge York Bath Cork
Galway Limerick Aberdeen Dundee Inverness Swansea Brighton Plymouth Norwich Exeter Canterbury
"""

_EVAL_CITIES = """
Coimbra Faro Braga Toledo Salamanca Zaragoza Alicante Murcia Santander Pamplona Montpellier Rennes
Grenoble Le Havre Nancy Metz Annecy Lausanne Lucerne Lugano Parma Padua Bari Catania Cagliari Perugia
Nuremberg Mainz Freiburg Heidelberg Aachen Rostock Kiel Lübeck Münster Regensburg Odense Aalborg
Linköping Örebro Lahti Kuopio Pärnu Daugavpils Klaipėda Grodno Kharkiv Dnipro Timișoara Brașov Ruse
Niš Novi Sad Mostar Ohrid Durrës Antalya Bursa Trabzon Batumi Gyumri Shiraz Isfahan Mosul Tripoli
Haifa Aswan Luxor Sfax Oran Meknes Tangier Agadir Saint-Louis Kumasi Ibadan Kano Arusha Dodoma Entebbe
Gondar Bulawayo Ndola Pretoria Stellenbosch Walvis Bay Beira Toamasina Abu Dhabi Manama Medina Salalah
Peshawar Quetta Agra Varanasi Lucknow Kochi Mysore Goa Pokhara Chittagong Kandy Mandalay Chiang Mai
Da Nang Hue Siem Reap Luang Prabang Davao Bandung Yogyakarta Medan Kuala Lumpur Ipoh Xiamen Qingdao
Dalian Kunming Lhasa Guilin Suzhou Tainan Daegu Gwangju Nara Kanazawa Okayama Nagasaki Hakodate
Darkhan Shymkent Samarkand Bukhara Osh Geelong Cairns Townsville Launceston
Dunedin Nelson Rotorua Nadi Hilo Juneau Kelowna Regina Saskatoon Sudbury Moncton
Spokane Eugene Reno Santa Fe Tulsa Wichita Des Moines Madison Green Bay Louisville Lexington
Knoxville Savannah Charleston Jacksonville Norfolk Albany Burlington Tijuana Puebla
Oaxaca Mérida Veracruz Camagüey Ponce Cartagena Cali Maracaibo Cuenca Arequipa Trujillo Sucre
Valdivia Rosario Mendoza Salta Punta del Este Encarnación Porto Alegre Florianópolis Belo Horizonte
Natal Goiânia Campinas Ushuaia
"""


def _cities(block: str) -> tuple[str, ...]:
    """One city per word, except the multi-word names listed in MULTI."""
    text = " ".join(block.split())
    names: list[str] = []
    for multi in _MULTI:
        if multi in text:
            text = text.replace(multi, " ")
            names.append(multi)
    names += text.split()
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n, None)
    return tuple(seen)


_MULTI = (
    "Addis Ababa", "Phnom Penh", "Hong Kong", "Las Vegas", "Los Angeles", "San Diego", "San Francisco",
    "Salt Lake City", "El Paso", "Oklahoma City", "Kansas City", "St. Louis", "New York", "New Orleans",
    "Mexico City", "Santo Domingo", "San Juan", "Panama City", "La Paz", "Buenos Aires", "Rio de Janeiro",
    "Sao Paulo", "São Luís", "Le Havre", "Novi Sad", "Saint-Louis", "Walvis Bay", "Abu Dhabi", "Chiang Mai",
    "Da Nang", "Siem Reap", "Luang Prabang", "Kuala Lumpur",
    "Santa Fe", "Des Moines", "Green Bay", "Punta del Este", "Porto Alegre",
    "Belo Horizonte",
)

TRAIN = World(
    name="train",
    cities=_cities(_TRAIN_CITIES),
    weather=(
        "What's the weather in {city}?", "What is the weather like in {city} today?", "weather {city}",
        "Weather in {city}?", "How's the weather in {city}?", "Is it raining in {city}?",
        "Will it rain in {city} today?", "Tell me the weather for {city}.", "Forecast for {city}, please.",
        "What's the forecast in {city}?", "Is it cold in {city} right now?", "How warm is it in {city}?",
        "What's the temperature in {city}?", "Can you check the weather in {city}?",
        "I'm heading to {city}. What's the weather?", "Any rain in {city} today?", "Is it sunny in {city}?",
        "{city} weather", "{city} weather today?", "Look up the weather in {city}.",
        "Give me the weather for {city}.", "weather for {city} pls", "How is the weather today in {city}?",
        "What kind of weather is {city} having?", "Is it snowing in {city}?", "Is it windy in {city}?",
        "What are conditions like in {city}?", "Check {city}'s weather.", "Current weather in {city}?",
        "Tell me about today's weather in {city}.", "What should I wear in {city} today?",
        "Is it nice out in {city}?", "Hot or cold in {city} today?", "How's {city} looking weather-wise?",
        "What's the weather doing in {city}?", "Weather check: {city}", "Is it foggy in {city} this morning?",
        "I'm in {city}, what's the weather?", "What will the weather be in {city} today?",
        "Do you know the weather in {city}?",
    ),
    umbrella=(
        "Do I need an umbrella in {city} today?", "Umbrella for {city}?", "Will I need an umbrella in {city}?",
        "Should I take an umbrella in {city}?", "Do I need an umbrella in {city}?",
    ),
    time=(
        "What time is it in {city}?", "What's the time in {city}?", "time in {city}", "Current time in {city}?",
        "Tell me the time in {city}.", "What's the local time in {city}?", "Is it morning in {city} now?",
        "What hour is it in {city}?", "Can you check the time in {city}?", "{city} time?", "{city} local time",
        "What time is it right now in {city}?", "Do you know the time in {city}?", "Is it late in {city}?",
        "What's the clock showing in {city}?", "Time in {city}, please.", "Is it night in {city} right now?",
        "Give me the current time for {city}.", "If I call {city} now, what time will it be there?",
        "What time do they have in {city}?", "What's {city}'s local time?", "time {city}",
    ),
    two_weather=(
        "What's the weather in {a} and in {b}?", "Weather in {a} and {b}?", "Compare the weather in {a} and {b}.",
        "How's the weather in {a} and {b} today?", "Tell me the weather for {a} and for {b}.",
        "{a} and {b} weather", "Is it raining in {a} or in {b}?",
    ),
    two_time=(
        "What time is it in {a} and in {b}?", "Time in {a} and {b}?", "Tell me the time in {a} and {b}.",
        "What's the local time in {a} and {b}?", "{a} and {b} time",
    ),
    weather_time=(
        "What's the weather in {a} and the time in {b}?", "Weather in {a}, and what time is it in {b}?",
        "Tell me the weather in {a} and the local time in {b}.",
    ),
    time_weather=(
        "What time is it in {a} and what's the weather in {b}?", "Tell me the time in {a} and the weather in {b}.",
        "Time in {a} and weather in {b}?",
    ),
    fahrenheit=(
        "What's the temperature in {city} in Fahrenheit?", "How warm is it in {city} in °F?",
        "Weather in {city} in Fahrenheit, please.", "Give me the weather in {city} with the temperature in Fahrenheit.",
        "What's the weather in {city}? I need Fahrenheit.", "{city} weather in Fahrenheit",
    ),
    convert=(
        "Convert {v} {u1} to {u2}.", "How many {u2} is {v} {u1}?", "How many {u2} in {v} {u1}?", "{v} {u1} in {u2}?",
        "What is {v} {u1} in {u2}?", "{v} {u1} to {u2}", "Change {v} {u1} into {u2}.",
        "Please convert {v} {u1} into {u2}.", "I have {v} {u1}. How much is that in {u2}?",
        "What's {v} {u1} in {u2}?", "convert {v} {u1} to {u2} please", "{v} {u1} = ? {u2}",
        "How much is {v} {u1} in {u2}?", "Can you convert {v} {u1} to {u2}?",
    ),
    calculate=(
        "What is {e}?", "Calculate {e}.", "{e} = ?", "What's {e}?", "Compute {e}", "How much is {e}?",
        "Work out {e} for me.", "Solve {e}", "{e}?", "Can you calculate {e}?", "Quick math: {e}",
        "What do you get for {e}?", "calc {e}", "What's the result of {e}?",
    ),
    note=(
        "Remember to {note}.", "Save a note: {note}", "Note: {note}", "Make a note to {note}.",
        "Add a note: {note}", "Write down: {note}", "Remind me to {note}.", "Save this note: {note}",
        "Take a note: {note}", "Please save a note: {note}.", "note to self: {note}",
        "Can you note that I need to {note}?",
    ),
    note_fact=(
        "Please note that {note}.", "Save a note: {note}", "Remember that {note}.", "Note: {note}",
        "Write this down: {note}",
    ),
    note_verbs=(
        "buy", "call", "email", "pay", "book", "clean", "fix", "return", "pick up", "send", "water", "check",
        "cancel", "renew", "order", "visit", "feed", "wash", "print", "finish", "text", "meet", "move", "sell",
    ),
    note_objects=(
        "milk", "the dentist", "the electricity bill", "the plants", "a table for two", "the bike", "the library books",
        "the kids", "the car", "mom", "the landlord", "the tickets", "the gym membership", "new shoes", "bread and eggs",
        "the report", "the cat", "the invoice", "the garden", "my passport", "the boiler", "Anna", "the team",
        "the package", "dad", "the vet", "the rent", "a birthday cake", "the windows", "the printer",
    ),
    note_when=("", "", "", " tomorrow", " on Monday", " at 5", " before noon", " this weekend", " on Friday", " tonight"),
    note_facts=(
        "the wifi password is tiger42", "the meeting moved to 3 pm", "my locker is number 18",
        "the door code is 4411", "parking is on level 2", "the train leaves at 8:15", "Sam owes me 20 euros",
        "the spare key is under the mat", "the plumber comes on Tuesday", "my seat is 14C",
        "the recipe needs 200 g of flour", "the shop closes at 6",
    ),
    greetings=("hi", "hello", "hey there", "good morning", "Hello!", "hi there", "hey", "Good afternoon!"),
    thanks=("thanks", "thank you!", "thanks a lot", "cheers", "Thanks, that helps.", "great, thank you"),
    about=("who are you?", "what can you do?", "help", "what are you?", "What tools do you have?", "How can you help me?"),
    other=(
        "tell me a joke", "write a poem about the sea", "who won the world cup in 2010?", "book me a flight to {city}",
        "translate hello into French", "play some music", "send an email to my boss", "order a pizza",
        "what's the meaning of life?", "find me a hotel in {city}", "what's the population of {city}?",
        "how do I get to {city} by train?", "who is the president of France?", "write a story about a dragon",
        "turn off the lights", "what is love?", "summarize this article", "recommend a movie",
        "what's the best restaurant in {city}?", "explain quantum physics",
    ),
    prefixes=("Hey, ", "Hi! ", "Quick question: ", "Please, ", "Hello, ", "OK, ", "So, "),
    suffixes=(" Thanks!", " thx", " Thank you.", " please"),
)

# More training phrasings: the words people use for each tool in many more sentence shapes, so
# that a request phrased in a way training never saw still has its tool's words in it.
TRAIN = replace(
    TRAIN,
    weather=TRAIN.weather + (
        "Is it hot outside in {city}?", "How cold is it outside in {city}?", "What's the weather report for {city}?",
        "Weather report for {city}, please.", "Get me the weather in {city}.", "Could you check the forecast for {city}?",
        "What weather is {city} having today?", "Is it a sunny day in {city}?", "Will it be cloudy in {city}?",
        "Is it cloudy in {city} now?", "How hot will it be in {city}?", "What's the weather outside in {city}?",
        "I'm going to {city}. Is it raining there?", "Any idea if it's raining in {city}?",
        "Could you tell me the weather in {city}?", "Please tell me the forecast for {city}.",
        "What can I expect from the weather in {city}?", "Fetch the weather for {city}.", "weather now in {city}",
        "today's weather {city}", "Tell me if it's warm in {city}.", "Rain or sun in {city}?",
        "I need the forecast for {city}.", "Show me the weather in {city}.", "How's it outside in {city}?",
        "What's the sky like over {city}?", "Is it a rainy day in {city} today?", "forecast {city}", "{city}: weather?",
        "What's the weather going to be like in {city}?", "Temperature in {city} right now?",
        "How many degrees is it in {city}?", "Is the weather good in {city}?", "Is it stormy in {city}?",
        "Find the weather for {city}.", "Look up today's forecast in {city}.", "Can you get the weather for {city}?",
        "Do you have the forecast for {city}?", "I want to know the weather in {city}.",
        "What's it doing outside in {city}?", "Is it warm enough for a walk in {city}?", "How is it outside in {city} today?",
        "Please check how the weather is in {city}.", "What's the weather there in {city} right now?",
        "Could you get me the forecast for {city}?", "I'd like to know the weather in {city}.",
    ),
    umbrella=TRAIN.umbrella + (
        "Is it umbrella weather in {city}?", "Should I bring an umbrella to {city}?", "Do I need my umbrella in {city}?",
        "Umbrella or not in {city} today?",
    ),
    time=TRAIN.time + (
        "Which hour is it in {city}?", "Is it day or night in {city}?", "Is it getting late in {city}?",
        "What does the clock say in {city}?", "Could you check the local time in {city}?", "I need the time in {city}.",
        "Get me the local time for {city}.", "{city} time at the moment?", "Tell me the current hour in {city}.",
        "Is it early in {city}?", "Is it evening in {city} yet?", "What's the time now in {city}?",
        "Please tell me the local time in {city}.", "time now {city}", "Clock check: {city}", "Is it lunchtime in {city}?",
        "Is it past midnight in {city}?", "How early is it in {city}?", "What time do they have over in {city}?",
        "Fetch the time in {city}.", "Could you find the time in {city}?", "I want to know the time in {city}.",
        "Is it daytime or night-time in {city}?", "What time is it over there in {city}?", "Could you tell me the time in {city}?",
        "Look at the clock for {city}.", "What's the current hour over in {city}?", "Is it still early in {city}?",
    ),
    two_weather=TRAIN.two_weather + (
        "Could you get the weather in {a} and {b}?", "Weather for both {a} and {b}, please.", "Is it sunny in {a} and in {b}?",
        "How's the weather in {a}, and in {b}?",
    ),
    two_time=TRAIN.two_time + (
        "Could you tell me the time in {a} and in {b}?", "The local time in {a} and {b}, please.",
        "What's the current hour in {a} and in {b}?",
    ),
    weather_time=TRAIN.weather_time + ("Get the forecast for {a} and the local time in {b}.", "I need the weather in {a} and the hour in {b}."),
    time_weather=TRAIN.time_weather + ("Check the time in {a} and the forecast in {b}.", "Could you get the hour in {a} and the weather in {b}?"),
    fahrenheit=TRAIN.fahrenheit + ("In Fahrenheit, how warm is it in {city}?", "What's the weather in {city}, in degrees Fahrenheit?"),
    convert=TRAIN.convert + (
        "{v} {u1}, expressed in {u2}?", "Turn {v} {u1} to {u2}, please.", "{v} {u1} is how many {u2}?",
        "I need {v} {u1} in {u2}.", "How many {u2} equal {v} {u1}?", "Give me {v} {u1} in {u2}.",
        "What's {v} {u1} when converted to {u2}?", "Convert {v} {u1} into {u2} for me.", "Could you turn {v} {u1} into {u2}?",
        "{v} {u1} -> {u2}", "If I have {v} {u1}, what is that in {u2}?", "Please express {v} {u1} as {u2}.",
        "How much would {v} {u1} be in {u2}?", "I'd like {v} {u1} in {u2}.",
    ),
    calculate=TRAIN.calculate + (
        "Can you evaluate {e} for me?", "What does {e} equal?", "Figure {e} out for me.", "Give me the result of {e}.",
        "{e} equals?", "Help me calculate {e}.", "What's the sum {e}?", "Do the math: {e}", "What is the answer to {e}?",
        "Find {e}.", "How much does {e} make?", "I need to know {e}.", "Please work out {e}.", "What comes out of {e}?",
        "Could you figure out {e}?", "I need help with {e}", "Tell me what {e} comes to.",
    ),
    note=TRAIN.note + (
        "Please jot a note: {note}", "Store a note: {note}", "Add this to my notes: {note}", "Keep this note: {note}",
        "Create a note: {note}", "Record a note: {note}", "My note: {note}", "Put in a note to {note}.",
        "Could you store a note for me: {note}", "Don't let me forget to {note}.",
    ),
    note_fact=TRAIN.note_fact + (
        "Keep in mind that {note}.", "Store the fact that {note}.", "Jot a note that {note}.", "Make a note that {note}.",
        "Add to my notes that {note}.",
    ),
    note_verbs=TRAIN.note_verbs + ("drop off", "fill", "mend", "wrap", "read", "pack", "plan for"),
    note_objects=TRAIN.note_objects + ("the oven", "the dog", "the keys", "the form", "the tent", "the recipe", "Maria", "the school"),
    greetings=TRAIN.greetings + ("hiya", "morning!", "good day", "hello assistant", "hey, what's up?", "evening!"),
    thanks=TRAIN.thanks + ("ty", "many thanks", "appreciate it", "thanks, bye", "perfect, thanks"),
    about=TRAIN.about + ("what do you do?", "tell me about yourself", "what are you able to do?", "list your tools", "who made you?"),
    other=TRAIN.other + (
        "sing happy birthday", "how do I cook rice?", "who wrote Hamlet?", "what's your favourite food?",
        "call a taxi to {city}", "rent a car in {city}", "translate thank you into German", "recommend a podcast",
        "tell me a fun fact", "how tall is Mount Everest?", "draw a cat", "what's the news today?",
        "buy a train ticket to {city}", "who discovered penicillin?", "what language do they speak in {city}?",
        "is {city} a nice place to live?", "where is {city}?", "what should I cook tonight?", "teach me chess",
        "what's a good name for a dog?", "how do I fix a flat tyre?", "reserve a table in {city}",
        "what are the best museums in {city}?", "write a haiku", "who was Napoleon?", "open my calendar",
    ),
    prefixes=TRAIN.prefixes + ("Excuse me, could you help? ", "Hi there. ", "Good morning, ", "Quick one: "),
    suffixes=TRAIN.suffixes + (" Cheers!", " ta", " Thanks a lot.", " Ta!", " Bye.", " Best.", " Regards.", " Merci!",
                               " Danke.", " Gracias!", " Thanks so much!", " Much obliged.", " Kind regards.", " Ciao!",
                               " Great!", " Perfect.", " Nice one.", " Bye now.", " Thx!", " Many thanks.", " Cool."),
)


EVAL = World(
    name="eval",
    cities=_cities(_EVAL_CITIES),
    weather=(
        "Could you tell me how the weather is in {city} right now?", "What's it like outside in {city}?",
        "I'd like the weather report for {city}.", "Weather report: {city}", "Is today a rainy day in {city}?",
        "Please get me today's weather in {city}.", "What weather can I expect in {city}?",
        "Any idea what the weather is doing in {city}?", "How hot is it in {city} today?",
        "Fetch the forecast for {city}.", "weather in {city} now", "What's today's forecast for {city}?",
        "Going to {city} later, how's the weather there?", "Is it going to be cloudy in {city}?",
    ),
    umbrella=("Should I pack an umbrella for {city}?", "Is an umbrella a good idea in {city} today?"),
    time=(
        "Could you tell me the current time in {city}?", "What's the hour over in {city}?", "Local time for {city}?",
        "I need to know what time it is in {city}.", "Is it still daytime in {city}?",
        "Check the clock in {city} for me.", "How late is it in {city} now?", "What time is it at the moment in {city}?",
    ),
    two_weather=("How's the weather in {a}, and how about {b}?", "I need the weather for both {a} and {b}."),
    two_time=("Could you get the local time in {a} and in {b}?", "What's the hour in {a} and in {b} right now?"),
    weather_time=("Check the forecast in {a} and the clock in {b}.",),
    time_weather=("I need the local time in {a} and the weather in {b}.",),
    fahrenheit=("How many degrees Fahrenheit is it in {city} today?", "I think in Fahrenheit: what's the weather in {city}?"),
    convert=(
        "Express {v} {u1} in {u2}.", "Turn {v} {u1} into {u2} for me.", "If something is {v} {u1}, how many {u2} is that?",
        "{v} {u1} equals how many {u2}?", "Could you convert {v} {u1} to {u2}?", "I need {v} {u1} converted to {u2}.",
    ),
    calculate=(
        "Please evaluate {e}.", "What does {e} come to?", "Figure out {e}.", "I need the result of {e}.",
        "{e} equals what?", "Help me with this sum: {e}",
    ),
    note=("Jot down: {note}", "Store this note for me: {note}", "New note: {note}", "Put this in my notes: {note}"),
    note_fact=("Keep a note that {note}.", "Jot this down: {note}"),
    note_verbs=("bring", "collect", "charge", "update", "sign", "repair", "post", "plan", "prepare", "review", "refill"),
    note_objects=(
        "the laptop", "the contract", "the parcel", "the photos", "the coffee machine", "the budget", "the flat keys",
        "grandma", "the slides", "the bathroom tap", "the holiday", "the medicine", "the lawn mower", "Lucas",
    ),
    note_when=("", "", " next week", " by Thursday", " at noon"),
    note_facts=(
        "the alarm code is 9027", "lunch is booked for 1 pm", "the blue folder has the receipts",
        "my bike lock code is 3316", "the guests arrive on Sunday",
    ),
    greetings=("good evening!", "hey, how are you?", "yo"),
    thanks=("thank you so much", "much appreciated"),
    about=("what are your abilities?", "introduce yourself"),
    other=(
        "sing me a song", "recommend a good book", "how do I bake bread?", "can you order me a taxi in {city}?",
        "who painted the Mona Lisa?", "what's your favourite colour?", "translate good night into Spanish",
    ),
    prefixes=("Excuse me, ", "Hello there. "),
    suffixes=(" Cheers.",),
)


def check_disjoint() -> None:
    """Assert that the eval world shares no entity or phrasing with the training world."""
    fields = [f for f in World.__dataclass_fields__ if f != "name"]
    for f in fields:
        train = {str(x).casefold() for x in getattr(TRAIN, f) if str(x).strip()}
        held = {str(x).casefold() for x in getattr(EVAL, f) if str(x).strip()}
        shared = train & held
        if f == "note_when":
            continue  # empty strings aside, checked below with the note texts themselves
        assert not shared, f"{f}: the eval shares {sorted(shared)} with training"
    all_train = {str(x).casefold() for f in fields for x in getattr(TRAIN, f)}
    assert not {c.casefold() for c in EVAL.cities} & all_train, "an eval city appears in training"
