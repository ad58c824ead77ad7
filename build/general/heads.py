"""Other ways to ask for what a tool does: request heads that share no word with the tool's own
description (run C matched requests to tools by the description's words, and refused "What's the
hour over in Davao?" for a tool described "The current time in a city"; TRAINING.md).

One spec a line, keyed by the spec's name in :mod:`build.general.domains`:

    name | do: imperative; ... | obj: noun phrase; ... | ask: direct question; ...

A head is followed by the parameters' mentions as the description phrase is ("what time is it" +
" in Davao"). ``do`` heads go in :data:`phrasing.DO_FRAMES`, ``obj`` in ``OBJ_FRAMES``, ``ask`` in
``ASK_FRAMES``. Written by hand for this corpus (no benchmark's text). :func:`held_out` keeps about
one head in six for the ``val_phrasing`` split only.
"""

from __future__ import annotations

import random
import re
import zlib
from contextlib import AbstractContextManager

from .values import switched

__all__ = ["HEADS", "NEEDS", "NEEDS_FROM_SEED", "NEED_SHARE", "KINDS", "STOP", "content_words", "held_out", "draw", "needs", "needs_on"]

KINDS = ("do", "obj", "ask")
# words a head may share with its tool's description: too common to tell tools apart
STOP = frozenset({"the", "and", "for", "with", "from", "into", "what", "how", "this", "that", "some", "any", "out", "all",
                  "can", "you", "your", "our", "does", "are", "will", "would", "there", "one", "get", "its", "it's"})

TEXT = """
# weather
get_forecast | do: tell me what it's going to be like outside; check the outlook; find out if I'll need an umbrella or sunglasses | obj: the outlook; the conditions expected over the coming days | ask: what's it going to be like outside; will it be sunny or rainy
get_air_quality | do: find out how clean the atmosphere is; see how polluted it is; tell me the pollution level | obj: the pollution level; how smoggy it is | ask: how polluted is it; is it safe to breathe outside
get_uv_index | do: find out how strong the sun is; check the sunburn risk; tell me how quickly I'd burn | obj: the sunburn risk; how strong the sun's rays are | ask: do I need sunscreen; how strong is the sun
get_rainfall | do: tell me how much rain fell; find out how wet it was; add up the precipitation | obj: the amount of rain that fell; the precipitation | ask: how much did it rain; how wet was it
get_sunrise | do: tell me when the sun comes up and goes down; check when it gets light and dark; look up daybreak and dusk | obj: daybreak and dusk; when it gets light and when it gets dark | ask: when does the sun rise and set; when does it get light and dark
# finance
get_stock_price | do: look up the current quote; tell me what the market is paying; find out the latest trading value | obj: the current quote; the latest trading value | ask: what's the latest quote; where is the ticker trading right now
convert_currency | do: exchange money; work out the exchange; switch some cash over | ask: how much would I get if I exchanged; what would I end up with after exchanging
loan_payment | do: figure out the mortgage instalment; tell me what I'd pay back every month on borrowing; calculate the repayments | obj: the mortgage instalment; what I'd repay every month on borrowed money | ask: how much would I repay every month; what would my mortgage instalments be
compound_interest | do: work out how savings grow over time; figure out the growth on a deposit with reinvested returns; project the earnings on savings | obj: the growth on savings; how much a deposit will earn over time | ask: how much will my savings grow; what will a deposit be worth after reinvesting the returns
tip_split | do: divide the check including gratuity; work out who owes what including gratuity; divvy up the tab with gratuity | obj: what everyone owes on the tab; the per-head cost of the check including gratuity | ask: how much does everyone owe; what's everyone's cut of the tab
get_company_profile | do: pull up background on a firm; find key facts about a business; give me an overview of a corporation | obj: background on a firm; an overview of a business | ask: what's known about the business; what are the key facts on the firm
# travel
search_flights | do: find plane tickets; look up air fares; see which airlines fly; check what planes are going | obj: plane tickets; air fares; options to fly | ask: what can I fly; are there any planes going; which airlines fly
book_hotel | do: reserve accommodation; sort me out a place to stay; grab me somewhere to sleep; lock in lodging | ask: could you reserve me accommodation; can you sort me a place to stay
find_attractions | do: suggest places worth visiting; recommend spots to explore; point me to the must-visit spots | obj: places worth visiting; the main landmarks; the top spots to explore | ask: what's worth visiting; where are the best spots to explore
get_travel_time | do: work out how long the journey takes; figure out the trip duration; tell me how long it'll take to go | obj: the journey duration; how long the trip takes | ask: how long does it take to go; how long is the journey
visa_requirements | do: find out what entry paperwork is needed; see whether an entry permit is needed; look up the entry conditions | obj: the entry conditions; what paperwork is needed for entry | ask: do I need a permit to enter; what papers does a traveller need for entry
plan_trip | do: put together a day-by-day schedule; map out a multi-stop journey; organise my holiday route; sketch a travel schedule | obj: a day-by-day schedule; a route for my holiday | ask: how should I arrange my holiday; can you lay out a route
# cooking
find_recipe | do: show me how to make; tell me how to cook; give me step-by-step directions for making | obj: a method for making; step-by-step cooking directions | ask: how do I make; how do you cook
recipes_by_ingredients | do: give me meal ideas based on what's in my fridge; tell me what I could cook tonight; help me use up my leftovers | obj: meal ideas; dishes I could make | ask: what can I cook; what could I make for dinner
scale_recipe | do: adjust the quantities; work out the amounts for a different number of people; multiply the amounts | ask: how much of everything do I need; how do I change the quantities
nutrition_facts | do: count the calories; break down the calories and macros; tell me the protein, fat and carbs | obj: the calorie count; the macros | ask: how many calories are there; how much protein and fat is there
cooking_timer | do: start a countdown; give me an alarm; buzz me when the time's up | ask: could you start a countdown; can you buzz me when it's done
# health
log_symptom | do: note down a health complaint; record an ailment; add an entry to my health diary | ask: can you record an ailment; could you note down a health complaint
bmi | do: work out my weight-to-height score; see whether I'm in a healthy weight range; rate my weight against my height | obj: my weight-to-height score; the weight-for-height ratio | ask: am I overweight; is my weight healthy
medicine_dose | do: find out how much of a drug to take; tell me the right amount of a medication to give; work out how many milligrams to give | obj: the right amount of a drug; how much of a medication to take | ask: how much of the drug should I give; how many pills can I safely take
heart_rate_zones | do: work out my training bands by pulse; figure out my cardio intensity ranges; give me target pulse ranges for exercise | obj: my target pulse ranges; the cardio training bands | ask: what pulse should I train at; how fast should my pulse be when I exercise
water_intake | do: figure out how much I should drink per day; tell me how many litres to drink; estimate my hydration needs | obj: how much fluid I need per day; my hydration target | ask: how much should I drink a day; how many glasses should I have per day
# sports
get_score | do: check the result; find out who's winning; tell me how the game went | obj: the result; how the game is going | ask: how did the match go; what was the result; who's winning
league_table | do: pull up the rankings; rank the teams; tell me who's leading the division; see where everyone sits in the division | obj: the rankings; the positions in the division | ask: who's top; where does everyone rank
player_stats | do: pull up the career numbers; check the performance figures; show the season record | obj: the performance numbers; the career figures | ask: what are the career numbers; how good are the performance figures
fixtures | do: check the next games; show the coming schedule; tell me when the next games are | obj: the next few games; the schedule ahead | ask: when's the next game; what games are coming
book_court | do: reserve a slot to play; rent a playing space; grab a playing slot | ask: can I reserve somewhere to play; could you hire me a place to play
# music
play_song | do: put on the track; let me hear; stream the tune | ask: can you put on the track; could I hear
create_playlist | do: make a new mix; put together a collection of tracks; build a set of tunes | ask: can you make me a mix; could you put together a set of tracks
search_music | do: look for tracks; find some tunes; browse artists and albums | obj: tracks; tunes; songs and albums | ask: what tracks are there; what songs have you got
song_lyrics | do: show me the words; pull up the words; tell me what they sing | obj: the words; the full sung text | ask: what are the words; how do the words go
concert_search | do: look for gigs; check for live shows; look up tour dates | obj: gigs; live shows; tour dates | ask: is there a gig coming up; are there any live shows
# files
read_file | do: show me what's inside; print the text of a document; display a document | obj: what's inside a document; the text of a document | ask: what's written inside; what does the document say
search_files | do: look for documents; hunt through my folders for documents; track down documents | obj: documents that mention a term; matching documents | ask: are there any documents; where can I find documents
move_file | do: relocate a document; shift a document over; drag a document across | ask: can you relocate a document; could you shift a document over
compress_files | do: squash some documents into an archive; bundle documents together; pack documents up | ask: can you bundle documents into an archive; could you pack documents up
share_file | do: give others access to a document; send a document over; let others see a document | ask: can you give access to a document; could you send a document over
disk_usage | do: see how much space a folder takes; find out how much storage a folder uses; measure a folder's size | obj: how much storage a folder uses; a folder's size on the drive | ask: how much space is taken; how big is the folder
# calendar
create_event | do: add a meeting; schedule an appointment; pencil in a meeting; put an entry in my diary | ask: can you schedule a meeting; could you add an appointment
list_events | do: check my agenda; show my schedule; go through my appointments | obj: my agenda; my appointments; what I have scheduled | ask: what's on my schedule; am I busy
find_free_slot | do: look for an opening; pick a gap in the schedule; work out when we're available | obj: an open window; a gap in the schedule | ask: when am I available; when is everyone available
cancel_event | do: call off the meeting; scrap the appointment; drop the meeting | ask: can we call off the appointment; is it possible to scrap the meeting
set_reminder | do: give me a nudge; ping me; make sure I don't forget; alert me | ask: can you nudge me; could you alert me
# shopping
search_products | do: show me what's available; look through the shop's stock; browse the store | obj: things I can buy; what's in stock | ask: what have you got; what's available
add_to_cart | do: put into my basket; pop into my shopping bag; include in my order | ask: can you put into my basket; could you throw into my basket
track_order | do: find out where my package is; check on my delivery; see when my parcel arrives | obj: the whereabouts of my package; the delivery progress | ask: where's my parcel; when will my package arrive
compare_prices | do: find out which shop is cheapest; check which retailer has the best deal; hunt down the best deal | obj: the cheapest deal; what each shop charges | ask: where can I get the best deal; which shop is cheapest
grocery_list | do: write down what I need to buy; note down the food I need; start a shopping note | ask: can you note down what I need from the shops; could you jot down my shopping
return_item | do: send back a purchase; get a refund; arrange to send back | ask: can I send back; how do I get a refund
# geometry
circle_area | do: find how much surface a round shape covers; compute the space inside a disc; measure a round region's surface | obj: the surface covered by a disc; how much space a round shape covers | ask: how big is a disc; how much surface does a disc cover
rectangle | do: measure an oblong's size and edge length; find the surface and border length of an oblong; work out the space and outline of a box shape | obj: the surface and border length of an oblong; an oblong's size and outline | ask: how big is an oblong and how long is its edge; what's the surface and boundary of an oblong
triangle_area | do: work out the surface of a three-sided shape; measure how much space a three-cornered shape covers; compute the space inside a three-sided figure | obj: the surface of a three-sided shape; how much space a three-sided figure covers | ask: how big is a three-sided shape; how much surface does a three-cornered shape cover
polygon_angles | do: add up the inside corners of a many-sided shape; find the total of the inner corners of a shape; compute the corner degrees inside a shape | obj: the total degrees inside a shape; the inner corner total of a shape | ask: how many degrees do the inner corners of a shape total; how many degrees are inside a shape
solid_volume | do: work out how much a 3d shape holds; find the capacity of a 3d shape; measure the space inside a shape | obj: the capacity of a 3d shape; how much space a 3d shape takes | ask: how much can a 3d shape hold; how much space is inside a 3d shape
hypotenuse | do: work out the long side with pythagoras; compute the slanted side from two legs; apply pythagoras to two legs | obj: the longest side via pythagoras; the slanted side opposite the 90-degree corner | ask: how long is the slanted side; what's the long side by pythagoras
# units
convert_length | do: change a distance; switch a distance measurement; translate a distance | ask: what does a distance come to; how does a distance translate
convert_temperature | do: change a reading in degrees; switch a thermometer reading; turn degrees | ask: how hot or cold is a reading; what's a thermometer reading equal to
convert_volume | do: change a liquid measure; turn a quantity of liquid; switch a capacity measurement | ask: how much liquid is a measure; what's a liquid measure equal to
convert_data_size | do: change an amount of storage; switch a storage figure; turn a file's storage amount | ask: how much storage is an amount; what's a storage figure equal to
convert_speed | do: change a velocity; switch a velocity reading; turn a rate of travel | ask: how quick is a velocity; what's a velocity equal to
# hr
add_employee | do: put a new hire on file; register a new staff member; onboard a new starter | ask: can you register a new hire; could you put a new starter on the system
request_leave | do: book a holiday; book some days away from work; arrange an absence | ask: can I take some days away from work; could I book a holiday
find_candidates | do: look for applicants; hunt for job seekers; source suitable hires | obj: applicants; suitable hires | ask: who could fill the position; who's qualified
payroll_summary | do: tell me how much we paid staff; break down the wage bill; total up the salaries | obj: the wage bill; total salary costs | ask: how much did we pay in wages; what were salary costs
schedule_interview | do: set up a meeting with a job applicant; book a chat with an applicant; arrange a hiring meeting | ask: can we meet the applicant; when can we see the applicant
# devices
set_light | do: turn a lamp; toggle a lamp; flick a lamp | ask: can you turn a lamp; could you toggle a lamp
set_thermostat | do: adjust the heating; change the temperature; make a room warmer or cooler | ask: can you adjust the heating; could you change the temperature
lock_door | do: secure or open an entrance; bolt or unbolt an entrance; latch or unlatch an entry | ask: can you bolt or unbolt an entrance; could you secure or release an entrance
device_status | do: see if a gadget is working; find out what a gadget is doing; see how an appliance is doing | obj: the state of a gadget; what an appliance is doing right now | ask: is the gadget online; is the appliance on or off
run_scene | do: start a preset; trigger a house routine; activate a preset mode | ask: can you trigger a routine; could you activate a preset
energy_usage | do: see how much power I've used; check electricity consumption; find out how many kilowatt-hours were used | obj: the electricity consumption; how much power was used | ask: how much electricity did I use; how much power has been drawn
# chemistry
molar_mass | do: work out the weight of one mole; find the grams per mole; figure out the formula weight | obj: the grams per mole; the formula weight; the molecular weight | ask: how much does one mole weigh; how many grams per mole
element_info | do: describe a periodic table entry; pull up the data on a chemical; give me the data on an atom type | obj: details on a periodic table entry; the key data on a chemical | ask: what do we know of a periodic table entry; what are the key properties of a chemical
ideal_gas | do: apply PV=nRT; work out how many atmospheres a sample exerts; figure out the force per area of a vapour | obj: the result of PV=nRT; the reading in atmospheres | ask: how many atmospheres does a sample exert; what reading in kPa would a sample give
dilution | do: apply C1V1 = C2V2; calculate the watered-down concentration; figure out the concentration after topping up a solution | ask: what's the concentration after topping up a solution; how strong is a solution once watered down
ph_value | do: work out the acidity; figure out how acidic a solution is; calculate the hydrogen ion level | obj: the acidity; the hydrogen ion level | ask: how acidic is a solution; how acidic or basic is a solution
# email
send_email | do: fire off a mail; drop a note by mail; write a mail | ask: can you mail; could you drop a note by mail
search_inbox | do: look through my mail; dig up old mails; find messages in my mailbox | obj: mails; messages in my mailbox | ask: did I get any mail; have I received anything
draft_reply | do: write a response; prepare an answer; compose a response | ask: how should I respond; what should I write back
archive_messages | do: clear out old mail; file away old emails; move old mail out of the way | ask: can you clear out old mail; could you tidy up my mailbox
# transit
next_departures | do: see when the upcoming buses leave; find out what's leaving soon; show the live timetable | obj: the upcoming buses and trains; what's leaving soon | ask: when does the bus come; when's the upcoming train
plan_journey | do: work out how to get; find me a way to travel; figure out the best way to go | obj: directions; the best way to get | ask: how do I get; what's the quickest way to get
fare_price | do: find out the ticket cost; see how much a ticket costs; look up the ticket cost | obj: the cost of a ticket; the ticket cost | ask: how much is a ticket; how much does it cost to travel
service_alerts | do: see if there are delays; find out about disruptions; look for problems | obj: any disruptions; delays and disruptions | ask: are there any delays; is anything wrong
# education
enroll_course | do: sign up for a class; register a student for a module; put a pupil's name down for a class | ask: can I sign up for a class; could you register a pupil for a module
get_grades | do: show the marks; pull up the report card; check the exam results | obj: the marks; the report card | ask: how's a pupil doing in class; what marks has a pupil got
quiz | do: write some revision questions; set me a mock test; draw up a test for revision | obj: a revision test; some mock test questions | ask: can you test me; could you give me a mock test
grade_average | do: find the mean of my marks; work out the mean mark; figure out my overall mark | obj: the mean mark; my overall mark | ask: what's the mean of my marks; what do my marks come to overall
# messaging
send_message | do: text; ping; drop a quick line | ask: can you ping; could you text
create_group | do: start a team thread; set up a shared conversation; make a thread for a few of us | ask: can you set up a shared conversation; could you start a thread
set_status | do: change my presence; update my availability; show others whether I'm around | ask: can you update my availability; could you change my presence
# pets
find_vet | do: locate an animal doctor; search for a veterinary clinic; look for an animal hospital | obj: animal doctors; veterinary clinics | ask: where can I take a sick pet; is there an animal clinic
feeding_plan | do: work out a diet; put together a meal schedule; draw up a food schedule | obj: a diet; a meal schedule | ask: how much food should I give; what should I give as meals
adopt_search | do: find animals needing a new home; look for rescue animals; browse shelter animals | obj: rescue animals; animals looking for a new home | ask: are there any rescue animals; which shelter animals are available
# fitness
log_workout | do: record a gym session; note down my training; track a lifting session | ask: can you record my gym session; could you save my training
calories_burned | do: work out how much energy I used; figure out the kcal I used up; tell me how much energy I spent | obj: the energy spent; the kcal used up | ask: how much energy did I use; how many kcal did I use up
step_goal | do: change my walking target; update how far I aim to walk each day; make my walking target per day | ask: can you change my walking target; could I aim for a new walking target
pace_calculator | do: figure out my minutes per kilometre; tell me how fast I ran; find my average split | obj: my minutes per kilometre; my split time | ask: how fast was I going; what were my minutes per kilometre
# realestate
search_listings | do: look for properties; find flats or houses; browse properties for sale | obj: properties; places on the market | ask: what's on the market; what properties are available
mortgage_quote | do: work out my monthly repayments; price up a home loan; tell me what a house loan would cost | obj: the monthly repayments; a home loan offer | ask: how much would I pay each month; what would the repayments be
rent_estimate | do: work out what a flat should cost monthly; value a let; guess the monthly letting price | obj: the going monthly price; the likely monthly letting price | ask: how much would a place cost monthly; what should I expect to pay each month
schedule_viewing | do: book a tour of the property; arrange to see the place; set up a visit | ask: can I go and see the property; when can I visit the flat
# devops
deploy | do: ship a release; roll out a build; push code live | ask: can you ship a release; could you roll out the code
server_metrics | do: pull performance stats; show monitoring graphs; look at resource figures | obj: the performance stats; monitoring figures | ask: what do the monitoring numbers say; how is the machine performing
restart_service | do: bounce a process; reboot an application; cycle a daemon | ask: can you bounce a process; could you reboot an application
open_ticket | do: file an outage report; raise an issue; log a problem report | ask: can you raise an issue; could you file an outage report
scale_service | do: adjust the number of instances; resize a deployment; add or remove instances | ask: can you adjust the instance count; could you resize a deployment
# books
search_books | do: look for titles; find reading material; hunt down novels | obj: titles; reading material; novels | ask: what's out there to read; are there any novels
book_details | do: tell me more about a title; pull up info on a novel; describe a title | obj: info on a title; the lowdown on a novel | ask: what can you tell me about a title; what's the info on a novel
reserve_book | do: put a hold on a title; set aside a copy; request a loan copy | ask: can I put a hold on a title; could you set aside a copy
reading_log | do: note down how far I got; update my bookmark; record pages I've got through | ask: can you note how far I got; could you update my bookmark
# movies
movie_showtimes | do: check what time the film is on; look up screening times; see when the film is playing | obj: the screenings; the screening schedule | ask: when is the film on; what time does the film start
book_tickets | do: reserve seats; buy seats for a film; grab us seats at the pictures | ask: can I reserve seats; could you grab us seats
movie_info | do: give me the details; pull up the cast and plot; look up the director and cast | obj: the details; the director, cast and plot | ask: what's the story and who's starring; who directed and what's the plot
recommend_movies | do: suggest something to watch; pick something to watch; give me ideas for what to watch | obj: something good to watch; viewing ideas | ask: what should I watch; anything good to watch
# language
translate | do: turn a phrase; render a passage; put some wording | obj: the equivalent wording; the foreign version | ask: how do you say; what's the way to say
define_word | do: explain a term; tell me what a term means; give the meaning of a term | obj: the meaning of a term; an explanation of a term | ask: what does the term mean; what is meant by the term
count_words | do: tally up a passage; measure a passage's length; find the length of a passage | obj: the length of a passage; the number of terms in a passage | ask: how long is the passage; how many terms are in the passage
spell_check | do: proofread a passage; look for typos; catch any typos | ask: are there any typos; did I make any typos
# math
solve_quadratic | do: find x for ax^2 + bx + c = 0; work out the zeros of a second-degree polynomial; factor a second-degree polynomial | obj: the zeros of a second-degree polynomial; the values of x where a parabola crosses zero | ask: where does a parabola cross zero; what values of x make ax^2 + bx + c zero
statistics | do: give me the mean, median and spread; describe a set of numbers; analyse a data set | obj: the mean, median and spread; an overview of a data set | ask: what's the mean and median; what are the key figures for a data set
percentage_of | do: figure out a share of an amount; calculate a cut of a total; find a slice of a figure | obj: a share of an amount; a fraction of a total | ask: how much is a share of an amount; what's a slice of a total
gcd_lcm | do: work out the greatest common divisor and least common multiple; figure out the highest common factor and lowest common multiple; calculate the HCF and smallest shared multiple | obj: the greatest common divisor and least common multiple; the HCF and lowest common multiple | ask: what's the biggest shared divisor and smallest shared multiple; what do the values share as factors and multiples
prime_check | do: find out if an integer can be factored; test an integer for divisors; see if an integer has only two divisors | ask: can an integer be factored; does an integer have divisors besides one and itself
# social
post_update | do: share on my feed; publish a status; put up a message on my timeline | ask: can you share on my feed; could you put out a tweet
follower_stats | do: show how my audience is growing; check how many people follow; break down audience growth | obj: audience numbers; the growth in fans | ask: how many people follow; how fast is the audience growing
trending_topics | do: show what's hot on social media; tell me what everyone's talking about; check what's going viral | obj: what's going viral; the hottest subjects | ask: what's everyone talking about; what's hot right now
# banking
account_balance | do: see how much money I have; find out what's left; see what funds are available | obj: the money available; the funds left | ask: how much money do I have; how much is left
transfer_money | do: send funds; move cash; pay over some funds | ask: can you send funds; could you move cash
list_transactions | do: show my latest payments; pull up the statement; show what's gone through | obj: the latest payments; my statement | ask: what have I spent; what payments went through
freeze_card | do: block my debit; put a hold on my debit; suspend a payment method | ask: can you block my debit; could you stop my debit from working
# events
find_events | do: see what's happening; look for shows and gigs; check what's going on | obj: shows and gigs; what's on; things to do | ask: what's happening; is anything going on
buy_event_tickets | do: purchase seats; grab me some passes; pay for entry | ask: can I get seats; could you sort me some passes
venue_info | do: tell me about a hall; describe a concert location; pull up facts on an arena | obj: facts on a hall; the lowdown on an arena | ask: what can you tell me about a hall; what's the capacity and address of a location
# astronomy
star_info | do: give me the details of the stellar object; describe the distant sun; show the brightness, distance and type of the celestial body | obj: stellar details; the distance and brightness of the celestial body | ask: what kind of sun is the celestial body; how far and how bright is the distant sun
planet_position | do: help me spot; locate in the heavens; give the coordinates | obj: the coordinates; the location overhead | ask: which way should I look to see; can I see
iss_passes | do: tell me when the orbiting lab flies over; show flyovers of the orbital laboratory; check for sightings of the orbiting outpost | obj: upcoming flyovers of the orbiting lab; sightings of the orbiting outpost | ask: when can I see the orbiting lab go over; when does the orbiting outpost fly over
moon_phase | do: check the lunar cycle; tell me how full the lunar disc is; see how much of the lunar disc is lit | obj: the lunar cycle stage; how full the lunar disc is | ask: how full will the lunar disc be; how much of the lunar disc is lit
# gardening
plant_care | do: give advice on keeping greenery alive; explain how to look after greenery; suggest how to keep greenery thriving | obj: advice on looking after greenery; growing advice | ask: how do I keep greenery alive; how should I look after greenery
watering_schedule | do: draw up a timetable for irrigation; work out when to irrigate; create an irrigation calendar | obj: an irrigation timetable; a calendar of when to irrigate | ask: how often should I irrigate; on which days should I irrigate
frost_dates | do: find out when the first and last freezes are; tell me when it stops freezing; see when the cold snaps end | obj: the first and last freezes; when the freezing season starts and ends | ask: when is the last freeze; when does it stop freezing
soil_mix | do: work out a potting blend; suggest a growing medium; recommend a compost blend | obj: a potting blend; a growing medium recipe | ask: what compost blend should I use; which potting medium is best
# wine
wine_pairing | do: recommend a bottle to drink; pick a red or white to match; choose what to pour | obj: a bottle that goes well; the right red or white | ask: what should I drink; which bottle goes well
cellar_add | do: record a purchase in my collection; stock my rack; enter a new vino into my inventory | ask: can you put a new purchase in my collection; could you update my stock
wine_info | do: tell me about a bottle; describe a label; pull up facts on a vino | obj: facts about a bottle; the lowdown on a label | ask: what's a bottle like; what can you tell me about a label
# charity
donate | do: give money; contribute; chip in | ask: can I give money; could you pay a gift
charity_rating | do: check how trustworthy the nonprofit is; find out how well the organisation is run; vet the cause | obj: the score of the nonprofit; how trustworthy the nonprofit is | ask: is the nonprofit legit; how well run is the organisation
volunteer_shifts | do: look for unpaid helping slots; see where I can help out; look up chances to lend a hand | obj: chances to help out; slots to lend a hand | ask: where can I help out; is there anywhere I could lend a hand
# cars
fuel_cost | do: work out what I'll spend on petrol; tally the gas money for a drive; figure out the petrol bill for a drive | obj: the petrol bill for a drive; what a drive will set me back in gas | ask: how much will I spend on petrol; how much gas money will a drive take
car_service | do: arrange a garage visit; schedule a garage appointment; get a mechanic slot | ask: can you arrange a garage visit; could you get a mechanic slot
rent_vehicle | do: arrange a hire; book a hire; get some wheels on hire | ask: can I hire; could you book a hire
ev_charging | do: locate plug-in points; show where to power up an electric car; look for electric car plug-ins | obj: places to plug in an electric car; electric car plug-in points | ask: where can I plug in my electric car; where can I top up my battery
# run E's extra specs (domains.EXTRA)
calculate_expression | do: work out; compute; do the sum; tally up; crunch the numbers on | obj: the result of; the answer to; the total of | ask: what's; what is; how much is; what do you get for
local_time | do: tell me the hour; check the clock; find out what o'clock it is; see how late it is | obj: the hour right now; the clock reading; what o'clock it is | ask: what hour is it; what's the hour; how late is it; what o'clock is it
convert_distance | do: change a length; turn a length; express how far something is | obj: the equivalent length of; how long a stretch is | ask: how long is; how far is
convert_weight | do: change a mass; turn a mass; express how heavy something is | obj: the mass of; how heavy something is | ask: how heavy is; what's the mass of
# run F's specs (domains.MORE)
add_memo | do: jot down; write down; note down; make a note; put this in my notes; keep a note; remember for me | ask: can you jot down; could you note down; will you write down
# run G's specs (domains.FIELDS)
convert_units | do: change a length; turn a distance; switch a length; express a distance differently | ask: how long is; how far is
convert_temp | do: change degrees; turn a thermometer figure; switch how hot something is | ask: how hot is; how warm is
convert_mass | do: change a weight; turn a weight; express how heavy something is | ask: how heavy is; what does it weigh
# run I's spec (domains.NOTES)
keep_note | do: jot down; write down; remember for me; put this in my notebook; save this for me; store this | ask: can you jot down; could you write down; will you remember
# run M's specs (domains.KEEP)
add_task | do: put this on my list of chores; remember a chore for me; keep a job on my list; log a job to get done | ask: can you remember a chore; could you log a job for me
write_entry | do: put this in my diary; record in my diary; log this in my diary; note this in my diary | ask: can you put this in my diary; could you record in my diary
store_text | do: keep these words; hang on to this; keep hold of this; remember these words for me | ask: can you hang on to this; could you keep these words
post_status | do: share on my feed; tell my followers; put this on my wall; put up a note on my profile | ask: can you share on my feed; could you tell my followers
"""


def _parse(text: str) -> dict[str, dict[str, tuple[str, ...]]]:
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for line in text.strip().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, *parts = (p.strip() for p in line.split("|"))
        heads: dict[str, tuple[str, ...]] = {}
        for part in parts:
            kind, _, rest = part.partition(":")
            if kind.strip() not in KINDS:
                raise ValueError(f"{name}: unknown kind of head {kind.strip()!r}")
            heads[kind.strip()] = tuple(h.strip() for h in rest.split(";") if h.strip())
        out[name] = heads
    return out


HEADS = _parse(TEXT)

# From run H's seed: requests that reach a tool through a need rather than through what it does
# ("do I need an umbrella" + " in Lisbon" for a forecast tool, "is it too late to ring someone" for
# the local time). Run G refused "Do I need an umbrella in Lisbon today?" beside a weather tool: its
# heads said what a tool does, its near misses were in the tool's domain, and nothing between them
# taught that a question about a need is served by the tool whose result answers it. Same rules as
# HEADS (no word of the tool's description; one head in six for validation only).
NEEDS_FROM_SEED = 8
NEEDS_TEXT = """
get_forecast | ask: do I need an umbrella; should I bring a coat; will I need a jacket; is it a good day for a picnic; is it warm enough for shorts; should I pack sunglasses; will there be clouds; how warm will it get; is it going to be freezing; can I hang the washing out; should I cycle or take the bus; do I need boots
get_uv_index | ask: should I put on sunscreen; will I burn at the beach; do I need a hat against the sun; can the kids play outside at noon without cream
get_air_quality | ask: is it okay to go for a run outside; should I wear a mask outdoors; can I open the windows; is it safe for my asthma outside
get_sunrise | ask: how early do I have to get up to catch the dawn; when should I head out to catch the dusk
local_time | ask: is it too late to ring someone; are people still awake; is it morning yet; would it be rude to call now; is the office open yet; is it lunchtime; have they finished work yet
get_travel_time | ask: when should I leave to get; will I get there by nine going; how early should I set off
visa_requirements | ask: can I just turn up at the border; what papers should I bring to the border
track_order | ask: is my parcel nearly here; should I stay home for my delivery
account_balance | ask: can I afford a new phone; do I have enough money
service_alerts | ask: will my commute be disrupted; should I leave early because of problems
next_departures | ask: how long do I have to wait; should I run to catch something
list_events | ask: am I free; what's on my plate; do I have anything booked
bmi | ask: should I lose some weight; am I too heavy for my height
water_intake | ask: am I drinking enough; should I have more glasses of liquid
get_stock_price | ask: did my shares go up; is it a good moment to sell
get_score | ask: did we win; should I be celebrating
device_status | ask: did I leave something switched on; is the gadget still charged
server_metrics | ask: is the machine struggling; why is the site slow
movie_showtimes | ask: can I catch the film tonight; is it too late to see the film
find_events | ask: is there anything fun to do; what could we do for a night out
calories_burned | ask: did I burn off my lunch; was my workout worth it
fuel_cost | ask: can I afford the drive; is driving cheaper than the train
"""
NEEDS = _parse(NEEDS_TEXT)
NEED_SHARE = 0.4  # of a spec's reworded requests, where it has need heads
_NEEDS = {"on": False}


def needs_on() -> bool:
    """Whether :func:`draw` offers the need heads too (run H's seed on, with :func:`needs`)."""
    return _NEEDS["on"]


def needs(on: bool) -> AbstractContextManager[None]:
    return switched(_NEEDS, on)


def content_words(text: str) -> set[str]:
    """The words of 3 letters or more that tell one request from another."""
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) >= 3 and w not in STOP}


def held_out(head: str) -> bool:
    """About one head in six belongs to validation only."""
    return zlib.crc32(("head:" + head).encode()) % 6 == 0


def draw(rng: random.Random, name: str, val: bool, kinds: tuple[str, ...] = KINDS) -> tuple[str, str] | None:
    """(kind, head) for the spec ``name`` from ``val``'s side of the split, or None where it has none."""
    needed = [(k, h) for k in kinds for h in NEEDS.get(name, {}).get(k, ()) if held_out(h) == val] if _NEEDS["on"] else []
    if needed and rng.random() < NEED_SHARE:
        return rng.choice(needed)
    options = [(k, h) for k in kinds for h in HEADS.get(name, {}).get(k, ()) if held_out(h) == val]
    return rng.choice(options) if options else None
