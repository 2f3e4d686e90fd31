#!/usr/bin/env python3
"""Writes examples/articles.csv: 300 invented news articles about two invented key events (a
flood in Riverside, an election in Valmont), each told in five phases in date order, with the
columns a scraped feed often has: event, url, date, headline, body. Used by the README's
quickstart. Every name, place and quote is made up. Same script, same bytes (seeded).

    python3 scripts/quality/make_example_articles.py > examples/articles.csv
"""

import csv
import datetime
import random
import sys

BYLINE = "Reporting by the Valley Courier staff; editing by the news desk."
FOOTER = "Read more: our live page has every update as it happens."

EVENTS = {
    "riverside_flood_2024": {
        "start": datetime.date(2024, 3, 1),
        "names": ["Mayor Ellen Hart", "Fire Chief Tom Okafor", "forecaster Priya Nair",
                  "resident Jorge Silva", "councillor Ann Booth", "engineer Dev Malik"],
        "phases": [
            ("Rain warning", 0, 3, [
                "Forecasters issued a red rain warning for the Riverside valley as a slow storm stalled over the hills.",
                "Up to {n} millimetres of rain are expected before Thursday, {who} said.",
                "The weather service warned that the Dunmore river could rise above its banks by the weekend.",
                "Council crews handed out sandbags at the depot on Mill Road as the rain warning was extended.",
                "Schools in the lower valley will close early because of the storm warning, {who} said.",
                "The storm has already dropped {n} millimetres of rain on the upper catchment since Monday.",
                "Residents near the river were told to move cars and valuables to higher ground before the rain peaks.",
            ], ["Red rain warning issued for Riverside valley", "Storm stalls over hills, rain warning extended",
                "Sandbags handed out as forecasters warn of heavy rain"]),
            ("River bursts its banks", 3, 6, [
                "The Dunmore river burst its banks overnight and flood water poured into the lower town.",
                "The old levee near the rail bridge gave way shortly after midnight, {who} said.",
                "About {n} homes in Riverside were flooded as the water reached the high street.",
                "Police ordered the evacuation of the lower town and opened shelters in two schools.",
                "Evacuated families spent the night in the sports hall, where volunteers served hot food.",
                "Flood water stood a metre deep on the high street by dawn, cutting the town in two.",
                "The levee breach sent a wall of water through the caravan park by the river.",
            ], ["Dunmore bursts its banks, lower town evacuated", "Levee gives way as flood water reaches high street",
                "Hundreds evacuated after Riverside levee breach"]),
            ("Rescues and the missing", 5, 9, [
                "Rescue boats and a coastguard helicopter lifted stranded residents from rooftops.",
                "Firefighters rescued {n} people trapped in cars on the flooded ring road, {who} said.",
                "Two people are still missing after their car was swept off the Dunmore bridge.",
                "Divers searching for the missing couple found their car a kilometre downstream.",
                "The death toll from the flood rose to {k} after a body was recovered near the weir.",
                "The helicopter crew winched an elderly man from the roof of his bungalow.",
                "Search teams with dogs checked every flooded house on Station Street for the missing.",
            ], ["Helicopter rescues stranded residents from rooftops", "Search for missing couple after car swept off bridge",
                "Flood death toll rises as divers search the river"]),
            ("Clean-up and aid", 9, 16, [
                "As the water went down, residents began shovelling mud and ruined furniture out of their homes.",
                "The government announced a flood aid package of {n} million for Riverside households.",
                "Insurers estimate the flood damage at {n} million, {who} said.",
                "Volunteers from across the county joined the clean-up, clearing mud from the high street.",
                "Skips piled with soaked carpets and broken furniture lined every street of the lower town.",
                "Families returning to flooded homes were offered grants of up to {n} hundred for repairs.",
                "The clean-up could take months, and some homes will need to be rebuilt, {who} said.",
            ], ["Residents begin clean-up as flood water recedes", "Government announces flood aid package",
                "Volunteers join the Riverside clean-up"]),
            ("Anger over the levee", 16, 24, [
                "Hundreds of residents marched to the town hall to protest over the failed levee.",
                "Protesters accused the council of ignoring warnings that the levee needed repairs.",
                "A report from {n} years ago had warned that the levee near the rail bridge was weak, {who} said.",
                "The council agreed to an independent inquiry into why the levee failed.",
                "Campaigners delivered a petition demanding new flood defences before next winter.",
                "The inquiry will examine why money set aside for levee repairs was never spent.",
                "At a stormy council meeting, {who} apologised to residents over the levee.",
            ], ["Residents march on town hall over failed levee", "Inquiry ordered into Riverside levee failure",
                "Council apologises as anger grows over flood defences"]),
        ],
    },
    "valmont_election_2024": {
        "start": datetime.date(2024, 10, 1),
        "names": ["candidate Maria Lenz", "President Karl Odin", "election chief Sara Voss",
                  "analyst Ben Ito", "judge Helen Marsh", "opposition leader Ivo Brandt"],
        "phases": [
            ("The campaign", 0, 10, [
                "The two leading candidates met for a televised debate on taxes, housing and the economy.",
                "In the debate, {who} promised to cut income tax and build {n} thousand new homes.",
                "Polls show the race for the Valmont presidency within two points a week before the vote.",
                "The campaign turned bitter as both candidates traded accusations over housing policy.",
                "Thousands attended the final campaign rally in the capital square, {who} said.",
                "A second debate focused on pensions, health care and the cost of living.",
                "Campaign spending has reached {n} million, a record for a Valmont election.",
            ], ["Candidates clash in televised debate", "Polls show tight race as campaign ends",
                "Final rallies close a bitter campaign"]),
            ("Election day", 10, 12, [
                "Voters queued for hours outside polling stations as turnout reached {n} percent.",
                "Polling stations in the capital stayed open late to let long queues of voters cast their ballots.",
                "Election officials reported a record turnout by midday, {who} said.",
                "Some polling stations ran out of ballot papers, forcing voters to wait.",
                "Observers said voting was calm and orderly in most districts.",
                "Exit polls gave neither candidate a clear lead as polling stations closed.",
            ], ["Record turnout as Valmont votes", "Long queues at polling stations on election day",
                "Exit polls show no clear winner"]),
            ("A disputed count", 12, 17, [
                "The count was suspended in three districts after observers reported irregularities.",
                "With {n} percent of ballots counted, the candidates were separated by fewer than {k} thousand votes.",
                "The opposition demanded a full recount, alleging that ballots had been lost.",
                "The election commission ordered a recount in the northern districts, {who} said.",
                "Counting staff worked through the night as the recount of the disputed ballots began.",
                "Both camps claimed victory before the final count was published.",
            ], ["Count suspended amid claims of irregularities", "Opposition demands full recount",
                "Recount ordered in disputed districts"]),
            ("Protests over the result", 17, 23, [
                "Tens of thousands of opposition supporters protested in the capital over the disputed result.",
                "Police used tear gas to disperse protesters outside the election commission.",
                "Protesters blocked the main bridge into the capital and demanded a new vote.",
                "Dozens of protesters were arrested after clashes with police, {who} said.",
                "The protests spread to {k} other cities as anger over the count grew.",
                "Opposition leaders called for a general strike until the result is annulled.",
            ], ["Protests erupt over disputed result", "Police fire tear gas at election protesters",
                "Protests spread as opposition calls for strike"]),
            ("The court rules", 23, 32, [
                "The supreme court upheld the election result and rejected the opposition's appeal.",
                "Judges found no evidence of fraud large enough to change the outcome, {who} said.",
                "The president-elect was sworn in at a ceremony in the parliament building.",
                "In her inauguration speech, {who} promised to heal the divisions of the campaign.",
                "The opposition said it would accept the court's ruling but keep campaigning for reform.",
                "Foreign leaders congratulated the new president after the court ruling.",
            ], ["Supreme court upholds election result", "New president sworn in after court ruling",
                "Opposition accepts ruling, vows to fight on"]),
        ],
    },
}

GENERAL = [
    "Local businesses said the week had been the hardest they could remember.",
    "The story has dominated the national news for days.",
    "Officials promised regular updates on the situation.",
    "Many residents said they were worried about what comes next.",
]


def article(rng, event, spec, i):
    phases = spec["phases"]
    p = min(len(phases) - 1, int(i * len(phases) / 150))
    # A few articles look back at the previous phase too.
    told = [p] if p == 0 or rng.random() < 0.75 else [p - 1, p]
    name, first_day, last_day, sentences, headlines = phases[p]
    day = spec["start"] + datetime.timedelta(days=rng.randint(first_day, last_day))
    paragraphs = []
    for q in told:
        pool = phases[q][3]
        for _ in range(rng.randint(2, 3)):
            chosen = rng.sample(pool, 3)
            paragraphs.append(" ".join(
                s.format(n=rng.randint(20, 900), k=rng.randint(2, 9), who=rng.choice(spec["names"]))
                for s in chosen))
    if rng.random() < 0.3:
        paragraphs.insert(rng.randint(1, len(paragraphs)), rng.choice(GENERAL))
    paragraphs.append(BYLINE)
    if rng.random() < 0.5:
        paragraphs.append(FOOTER)
    headline = rng.choice(headlines)
    slug = headline.lower().replace(",", "").replace(" ", "-")
    url = f"https://news.example.org/{day.isoformat()}/{slug}-{i}"
    return [event, url, day.isoformat(), headline, "\n\n".join(paragraphs)]


def main():
    rng = random.Random(37)
    rows = []
    for event, spec in EVENTS.items():
        rows.extend(article(rng, event, spec, i) for i in range(150))
    rng.shuffle(rows)
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["event", "url", "date", "headline", "body"])
    w.writerows(rows)


if __name__ == "__main__":
    main()
