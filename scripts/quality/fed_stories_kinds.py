"""The invented material of scripts/quality/fed_stories.py: each KIND of story (its people's roles, its
feature, story-wide background sentences, and its phases in date order, each with headline and
sentence templates), off-topic local NOISE, and the pools of names, streets and towns. Templates
take {who} {n} {k} {place} {town} {feature} {start}. Changing anything here changes the bytes
`fed_stories.py generate` writes for a seed.
"""


def P(key, headlines, templates):
    """A phase: its key, headline templates and sentence templates (each `|`-separated)."""
    return key, [h.strip() for h in headlines.split("|")], [t.strip() for t in templates.split("|")]


KINDS = {
    "flood": dict(
        roles=["Mayor", "Fire Chief", "forecaster", "resident", "councillor", "engineer"],
        features=["Dunmore", "Avel", "Kessel", "Wend", "Ormer", "Tarrow"],
        background="The flood has killed {k} people in {town} since the {feature} rose on {start}.|"
        "More than {n} homes have been damaged since the flooding began on {start}.|"
        "The {feature} flood is the worst to hit {town} in living memory.|"
        "Flood water first reached {town} on {start} after days of heavy rain.|"
        "The floods have cost the region an estimated {n} million so far.",
        phases=[
            P("warning", "Red rain warning issued for {town}|Storm stalls over hills as rain warning is extended|"
              "Sandbags handed out as the {feature} rises",
              "Forecasters issued a red rain warning for {town} as a slow storm stalled over the hills.|"
              "Up to {n} millimetres of rain are expected before the weekend, {who} said.|"
              "The weather service warned that the {feature} river could rise above its banks within two days.|"
              "Council crews handed out sandbags at the depot on {place} as the warning was extended.|"
              "Rain gauges upstream of {town} recorded {n} millimetres in a single night.|"
              "The forecast models show the storm stalling over the catchment until Friday, {who} said.|"
              "Flood sirens were tested along {place} as the river gauge climbed past the amber mark.|"
              "Farmers moved livestock off the water meadows after the forecasters' warning.|"
              "Schools near the river will close early because of the storm warning, {who} said.|"
              "The river gauge at the old mill read {k} metres, its highest reading this winter.|"
              "Meteorologists said a month of rain could fall in three days on saturated ground.|"
              "Residents were urged to sign up for flood alerts and keep a go-bag ready."),
            P("evacuation", "Hundreds evacuated as the {feature} keeps rising|Shelters open for {town} evacuees|"
              "Police go door to door on {place} urging residents to leave",
              "Police ordered the evacuation of {n} homes on {place} as the {feature} kept rising.|"
              "Evacuated families spent the night in the sports hall, where volunteers served hot soup.|"
              "Buses took elderly residents from the care home to an evacuation centre on higher ground.|"
              "Officers went door to door on {place} urging residents to leave before dark.|"
              "Some residents refused to evacuate and stayed upstairs with their pets, {who} said.|"
              "The evacuation centre at the school gym was full by midnight, with {n} camp beds in use.|"
              "Red Cross volunteers handed out blankets and registered evacuees at the shelter.|"
              "Traffic queued on the ring road as families packed cars and left the lower town.|"
              "The evacuation order covers every street within {k} hundred metres of the river, {who} said.|"
              "Evacuees said they had grabbed passports, medicine and little else.|"
              "A second shelter opened in the church hall on {place} as the evacuation widened.|"
              "Police said the evacuation zone would stay closed until engineers inspect the levee."),
            P("breach", "Levee gives way as the {feature} floods {town}|Lower town under water after breach|"
              "Wall of water pours through {place}",
              "The levee near the rail bridge gave way shortly after midnight, {who} said.|"
              "The {feature} burst its banks and flood water poured into the lower town of {town}.|"
              "The breach sent a wall of water through the caravan park on {place}.|"
              "Flood water stood a metre deep on {place} by dawn, cutting {town} in two.|"
              "Engineers said a section of the embankment {n} metres long had collapsed.|"
              "The river peaked at {k} metres above normal, a record at the {feature} gauge.|"
              "Water surged through the breach and flooded {n} homes within an hour.|"
              "The burst embankment had been patched with sandbags only days before, {who} said.|"
              "Cellars, shops and the ground floor of the library on {place} filled with brown water.|"
              "Video showed the torrent pouring through the gap in the levee and over the fields.|"
              "The substation was shut down as flood water lapped at its walls.|"
              "By morning the breach had widened and the whole lower town was under water."),
            P("rescue", "Helicopter rescues stranded residents from rooftops|Search for the missing after car swept away|"
              "Lifeboat crews reach families trapped on {place}",
              "Rescue boats and a coastguard helicopter lifted stranded residents from rooftops.|"
              "Firefighters rescued {n} people trapped in cars on the flooded road near {place}.|"
              "The helicopter crew winched an elderly man from the roof of his bungalow.|"
              "Lifeboat crews waded through chest-deep water to reach families on {place}.|"
              "Two people are still missing after their car was swept off the {feature} bridge.|"
              "Divers searching for the missing found a car a kilometre downstream, {who} said.|"
              "The death toll rose to {k} after a body was recovered near the weir.|"
              "Search teams with dogs checked every flooded house on {place} for the missing.|"
              "Rescuers in inflatable boats ferried {n} stranded residents to dry land overnight.|"
              "A pregnant woman was airlifted to hospital after being stranded for a day, {who} said.|"
              "Mountain rescue teams joined the search along the swollen riverbanks.|"
              "Crews winched a family of four from an upstairs window as the water kept rising."),
            P("cleanup", "Residents begin the clean-up as flood water recedes|Volunteers clear mud from {place}|"
              "Skips line the streets of {town}",
              "As the water went down, residents began shovelling mud and ruined furniture out of their homes.|"
              "Skips piled with soaked carpets and broken furniture lined {place}.|"
              "Volunteers from across the county joined the clean-up, clearing silt from the high street.|"
              "Industrial dryers hummed in flooded shops as owners tried to reopen, {who} said.|"
              "The clean-up could take months and some homes will need to be gutted, {who} said.|"
              "Council lorries removed {n} tonnes of flood debris in the first week.|"
              "Residents returning home found a tide line of mud halfway up their walls.|"
              "Pumps drained the last standing water from the underpass on {place}.|"
              "Mould is already spreading in homes that flooded, health officials warned.|"
              "Shopkeepers on {place} hosed silt from their floors and threw out spoiled stock.|"
              "The railway line reopened after engineers cleared debris from the tracks.|"
              "Students and church groups spent the weekend scrubbing the community centre."),
            P("aid", "Government announces flood aid for {town}|Insurers face record flood claims|"
              "Flood grants too small, say campaigners",
              "The government announced a flood aid package of {n} million for {town} households.|"
              "Insurers estimate the flood damage at {n} million, {who} said.|"
              "Families whose homes flooded will get grants of up to {n} hundred for repairs.|"
              "Many tenants on {place} had no contents insurance and lost everything, {who} said.|"
              "A charity appeal for flood victims raised {n} thousand in its first day.|"
              "Loss adjusters began visiting flooded homes to assess insurance claims.|"
              "Small businesses can apply for rate relief and emergency loans, the council said.|"
              "Insurers said claims from {town} had passed {n} thousand, a record for one town.|"
              "The minister visited {town} and promised the aid would arrive within weeks.|"
              "Campaigners said the grants were too small to cover the cost of repairs.|"
              "Householders complained that insurers were slow to pay out on flood claims.|"
              "The emergency fund will also pay for temporary housing for {n} families."),
            P("inquiry", "Residents march on town hall over failed levee|Inquiry ordered into levee failure|"
              "Council apologises as anger grows in {town}",
              "Hundreds of residents marched to the town hall to protest over the failed levee.|"
              "A report from {k} years ago had warned that the levee near the rail bridge was weak, {who} said.|"
              "The council agreed to an independent inquiry into why the levee failed.|"
              "The inquiry will examine why money set aside for levee repairs was never spent.|"
              "At a stormy council meeting, {who} apologised to residents over the flood defences.|"
              "Campaigners delivered a petition with {n} signatures demanding new flood defences.|"
              "Leaked emails show engineers raised concerns about the embankment last year.|"
              "The chair of the inquiry said hearings would begin next month in {town}.|"
              "Opposition councillors called for the head of the flood authority to resign.|"
              "The inquiry will take evidence from residents, engineers and the environment agency.|"
              "Protesters outside the council offices held placards saying the town had been warned.|"
              "The environment agency denied that it had ignored warnings about the levee."),
        ]),
    "wildfire": dict(
        roles=["Fire Commissioner", "Mayor", "resident", "firefighter", "Police Inspector", "meteorologist"],
        features=["Cedar Ridge", "Black Mountain", "Wolf Hill", "the Harrow Range", "Pine Gap", "Sorrel Peak"],
        background="The wildfire has burned for days since it broke out near {feature} on {start}.|"
        "The fire has destroyed {n} homes and burned thousands of hectares since {start}.|"
        "It is the worst wildfire season {town} has seen in decades.|"
        "The blaze near {feature} has killed {k} people, officials said.|"
        "The fire that began on {start} has forced thousands of people from their homes.",
        phases=[
            P("outbreak", "Grass fire breaks out near {feature}|Smoke seen from {town} as blaze starts|"
              "Firefighters rush to hillside blaze",
              "A grass fire broke out on the slopes of {feature} on a hot, dry afternoon.|"
              "Smoke from the fire near {feature} could be seen from {town}, {who} said.|"
              "The blaze started close to a hiking trail and spread into dry scrub.|"
              "Firefighters were called to the fire shortly after two o'clock, {who} said.|"
              "The fire had burned {n} hectares within its first hour.|"
              "Hot, dry weather and low humidity made the fire hard to control from the start.|"
              "Hikers reported a column of smoke rising above the pine woods near {place}.|"
              "A total fire ban was already in force across the district when the blaze began.|"
              "The fire service sent {k} engines to the first reports of the blaze.|"
              "Temperatures near forty degrees had left the undergrowth tinder dry, {who} said.|"
              "Witnesses described flames racing up the hillside through dry grass.|"
              "Officials said the cause of the fire was not yet known."),
            P("spread", "Wind pushes wildfire across the ridge|Fire jumps the highway near {town}|"
              "Embers spark spot fires as blaze grows",
              "Strong winds pushed the wildfire across the ridge overnight, {who} said.|"
              "The blaze jumped the highway and spread into the pine forest beyond {place}.|"
              "Embers carried on gusts of {n} kilometres an hour started spot fires ahead of the front.|"
              "The fire has now burned more than {n} hectares of forest and farmland.|"
              "Firefighters said the flames were moving faster than a person could run.|"
              "A wind change sent the fire front towards {town} late in the evening.|"
              "Thick smoke turned the sky orange and blotted out the sun over {town}.|"
              "Spot fires broke out on both sides of the valley as the blaze spread.|"
              "The fire created its own weather, with towering smoke clouds and lightning, {who} said.|"
              "Ash fell on cars and gardens across {place} as the fire grew.|"
              "The fire front stretched {k} kilometres along the ridge by midnight.|"
              "Forecasters warned that gusty winds would fan the flames again on Saturday."),
            P("evacuation", "Residents told to leave now as fire approaches|Thousands flee {town}|"
              "Evacuees crowd into the showground",
              "Authorities ordered residents of {place} to evacuate immediately as the fire approached.|"
              "Emergency alerts told people in {town} to leave now, {who} said.|"
              "Thousands of people fled along the coast road as the flames drew closer.|"
              "Evacuees crowded into the showground, many with pets and horses.|"
              "Cars queued for hours on the only road out of {place} as smoke thickened.|"
              "Police went door to door urging residents who stayed to leave.|"
              "An evacuation centre at the high school took in {n} people overnight.|"
              "Some residents stayed behind to defend their homes with garden hoses.|"
              "Hospital patients and care home residents were moved by bus out of {town}.|"
              "The evacuation order now covers {k} towns and villages, {who} said.|"
              "Families slept in their cars in the car park of the evacuation centre.|"
              "Evacuees were told it could be days before they could return home."),
            P("firefighting", "Water bombers attack the fire front|Crews cut firebreaks to save {place}|"
              "Hundreds of firefighters battle the blaze",
              "Water-bombing aircraft dropped red retardant along the edge of the fire.|"
              "More than {n} firefighters are now battling the blaze, {who} said.|"
              "Helicopters with water buckets scooped from the lake and dumped it on the flames.|"
              "Crews cut firebreaks with bulldozers to protect homes on {place}.|"
              "Firefighters lit back-burns overnight to starve the fire of fuel.|"
              "A large air tanker flew in from the capital to help fight the blaze.|"
              "Exhausted crews worked {k} shifts in a row on the fire lines, {who} said.|"
              "Fire trucks lined {place} as crews defended houses from flying embers.|"
              "Volunteer brigades from across the region joined the firefighting effort.|"
              "Aircraft were grounded for several hours because thick smoke made flying unsafe.|"
              "Firefighters held the line along the highway despite strong winds.|"
              "A firefighter was treated in hospital for burns and smoke inhalation."),
            P("destruction", "Homes reduced to ash on {place}|Wildfire death toll rises to {k}|"
              "Residents return to find nothing left",
              "At least {n} homes were destroyed when the fire swept through {place}, {who} said.|"
              "Residents returned to find their houses reduced to ash and twisted metal.|"
              "The death toll from the wildfire rose to {k}, police said.|"
              "Burnt-out cars lined the road where families had tried to flee.|"
              "The fire destroyed the primary school, the community hall and the petrol station.|"
              "Farmers lost thousands of sheep and kilometres of fencing in the blaze.|"
              "Only chimneys were left standing on whole streets of {place}.|"
              "Insurers said the fire could be the costliest in the region's history.|"
              "Aerial photos show a scorched landscape of blackened trees around {town}.|"
              "Police said {k} people were still unaccounted for after the blaze.|"
              "Power lines and water pipes were destroyed, leaving {n} homes without services.|"
              "Residents sifted through the ashes of their homes for anything they could save."),
            P("containment", "Rain helps crews contain the wildfire|Fire under control at last|"
              "Evacuation orders lifted for {place}",
              "Rain fell across the fire zone overnight, helping crews to contain the blaze.|"
              "The fire is now {n} percent contained, {who} said.|"
              "Firefighters said the fire was under control for the first time in a week.|"
              "Evacuation orders for {place} were lifted and residents were allowed home.|"
              "Crews are mopping up hot spots and patrolling the edges of the burnt area.|"
              "The last aircraft were stood down as cooler weather arrived.|"
              "Residents cheered as the first rain in weeks fell on {town}.|"
              "The fire service downgraded the alert level to advice.|"
              "Fire crews will stay in the area for days to watch for flare-ups, {who} said.|"
              "Roads into {town} reopened as the smoke cleared.|"
              "The total area burned stands at {n} thousand hectares, officials said.|"
              "Firefighters who had worked for days were finally sent home to rest."),
            P("investigation", "Power line blamed for the {feature} fire|Man arrested on suspicion of arson|"
              "Inquiry into fire response announced",
              "Investigators believe the fire was sparked by a fallen power line, {who} said.|"
              "Police arrested a man on suspicion of arson in connection with the fire.|"
              "The power company said it would cooperate fully with the fire investigation.|"
              "Fire investigators found the point of origin near a trail on {feature}.|"
              "A coroner will hold an inquest into the deaths caused by the fire.|"
              "Residents questioned why the emergency alert reached them so late.|"
              "The state announced an inquiry into the response to the fire.|"
              "Lawyers said they were preparing a class action against the power company.|"
              "The arson suspect was remanded in custody after appearing in court, {who} said.|"
              "Critics said hazard-reduction burns had been cut back for years.|"
              "The inquiry will examine warnings about vegetation near power lines.|"
              "Investigators collected {n} witness statements, police said."),
        ]),
    "shooting": dict(
        roles=["Police Chief", "Mayor", "witness", "surgeon", "Detective Inspector", "shop owner"],
        features=["the Meridian shopping centre", "the Parkway mall", "Northgate station", "the Crown cinema",
                  "the Riverside market hall"],
        background="The shooting at {feature} on {start} killed {k} people and wounded {n}.|"
        "The attack on {start} was the deadliest shooting in {town} in decades.|"
        "{town} is still in shock after the gunman opened fire at {feature} on {start}.|"
        "The gunman killed {k} people before he was stopped, police have said.|"
        "The shooting at {feature} has dominated the national news since {start}.",
        phases=[
            P("attack", "Gunman opens fire at {feature}|Several killed in {town} shooting|"
              "Shoppers flee as shots ring out",
              "A gunman opened fire at {feature} in {town} on a busy afternoon, {who} said.|"
              "Shoppers ran for the exits as shots rang out inside {feature}.|"
              "Witnesses heard {k} bursts of gunfire near the food court.|"
              "At least {k} people were killed and {n} wounded in the shooting, police said.|"
              "People hid in storerooms and changing rooms as the gunman walked through the building.|"
              "Ambulances lined {place} as the wounded were carried out on stretchers.|"
              "A security guard was among the first to be shot, witnesses said.|"
              "Panicked callers flooded the emergency line with reports of a shooter.|"
              "The gunman fired a rifle from the upper floor into the crowd below, {who} said.|"
              "Videos posted online showed people sprinting across the car park.|"
              "The shooting lasted about {k} minutes before police arrived.|"
              "Hospitals in {town} declared a major incident and called in extra staff."),
            P("manhunt", "Manhunt for {town} gunman|Armed police lock down {place}|Suspect arrested after standoff",
              "Armed police locked down the area around {place} as they searched for the gunman.|"
              "The suspect fled in a grey van and a manhunt was under way, {who} said.|"
              "Police shot and arrested the suspect after a standoff on {place}.|"
              "Schools across {town} were placed in lockdown during the manhunt.|"
              "Helicopters circled overhead as officers searched house to house.|"
              "Police released a photo of the suspect and asked the public for help.|"
              "The suspect was arrested at a petrol station {n} kilometres away.|"
              "Officers found weapons and ammunition in the suspect's car, {who} said.|"
              "Residents were told to stay indoors while armed officers searched {place}.|"
              "The police chief said there was no further threat to the public.|"
              "Tactical teams raided a flat on {place} in the early hours.|"
              "Roadblocks were set up on every road out of {town}."),
            P("victims", "Victims of {feature} shooting named|Surgeons fight to save the wounded|"
              "Families wait at hospital for news",
              "Police named the victims, who included a teacher, a nurse and a teenage boy.|"
              "The youngest victim was {k} years old, {who} said.|"
              "Surgeons worked through the night on {n} wounded patients.|"
              "Families gathered at the hospital waiting for news of loved ones.|"
              "A father described how his daughter shielded a child from the gunfire.|"
              "{k} of the wounded remain in a critical condition, the hospital said.|"
              "The victims' families asked for privacy as they grieve.|"
              "A nurse who died in the shooting was remembered as kind and funny by colleagues.|"
              "Blood donors queued outside the hospital on {place} after an appeal.|"
              "The hospital chief said staff had treated gunshot wounds all night.|"
              "A student who was shot in the leg told reporters he played dead.|"
              "The coroner formally identified the last of the victims, {who} said."),
            P("vigil", "Thousands hold candlelit vigil in {town}|Flowers and candles outside {feature}|"
              "{town} mourns its dead",
              "Thousands gathered for a candlelit vigil in the main square of {town}.|"
              "Mourners left flowers, candles and teddy bears outside {feature}.|"
              "Church bells rang across {town} in memory of the victims.|"
              "A minute's silence was held at schools and workplaces, {who} said.|"
              "Mourners wrote messages of love on a wall of remembrance on {place}.|"
              "The funeral of the youngest victim drew hundreds of people.|"
              "Flags flew at half mast on public buildings across the country.|"
              "The vigil ended with the names of the victims read aloud.|"
              "Faith leaders led prayers for the dead and the wounded.|"
              "A fund for the victims' families has raised {n} thousand, {who} said.|"
              "Residents hugged and wept as the candles were lit.|"
              "The mayor said {town} would never forget the people it lost."),
            P("motive", "What we know about the {town} gunman|Suspect posted manifesto before attack|"
              "Detectives search for a motive",
              "The suspect, a local man in his twenties, had a history of online threats, {who} said.|"
              "Detectives are examining the suspect's phone and computer for a motive.|"
              "Neighbours described the suspect as a loner who rarely left his flat.|"
              "The suspect had posted a manifesto online hours before the attack.|"
              "Police said the suspect bought the rifle legally {k} months ago.|"
              "Investigators believe the attack was planned for weeks.|"
              "The suspect's former employer said he had been sacked last year.|"
              "Counter-terrorism officers have joined the investigation into the motive.|"
              "Police searched the suspect's home on {place} and seized several weapons.|"
              "The suspect had been reported to police twice, {who} said.|"
              "Experts said the manifesto echoed extremist material circulating online.|"
              "Detectives are questioning the suspect's relatives and friends."),
            P("court", "Accused gunman charged with murder|Suspect appears in court|Families pack courtroom",
              "The suspect was charged with {k} counts of murder and appeared in court, {who} said.|"
              "The accused did not enter a plea during a brief court hearing.|"
              "The judge ordered the suspect to be held without bail.|"
              "Prosecutors said they would seek the maximum sentence.|"
              "Relatives of the victims packed the public gallery of the courtroom.|"
              "The defence lawyer asked for a psychiatric assessment of the accused.|"
              "The case was adjourned until next month, the court heard.|"
              "The accused appeared by video link from a high-security prison.|"
              "Prosecutors read out the charges as families wept in court.|"
              "The court heard the accused had fired {n} rounds during the attack.|"
              "A trial date is expected to be set at the next hearing, {who} said.|"
              "The accused was also charged with the attempted murder of {n} people."),
            P("gunlaws", "Calls grow for a ban on semi-automatic rifles|Government promises tougher gun laws|"
              "Students march on parliament over guns",
              "Lawmakers called for a ban on semi-automatic rifles after the shooting.|"
              "The government promised to tighten gun licensing rules, {who} said.|"
              "Gun owners' groups said the new rules would punish law-abiding shooters.|"
              "Parliament will debate a gun buyback scheme next week.|"
              "A petition calling for stricter gun laws gathered {n} thousand signatures.|"
              "The prime minister said the firearms law would change within months.|"
              "Students marched on parliament demanding action on guns.|"
              "The bill would require background checks on every firearm sale.|"
              "Critics said the licensing system failed to flag the suspect's threats.|"
              "The police minister ordered a review of how gun licences are granted.|"
              "Opinion polls show a majority support tougher firearms laws, {who} said.|"
              "The gun lobby launched an advertising campaign against the bill."),
        ]),
    "coup": dict(
        roles=["General", "Colonel", "opposition leader", "analyst", "Foreign Minister", "spokesman"],
        features=None,  # the capital: an invented town name
        background="The army seized power in {town} on {start}, ousting the elected president.|"
        "The crisis in {town} began with protests over fuel prices before the coup of {start}.|"
        "Soldiers have controlled {feature} since the coup on {start}.|"
        "The coup is the latest upheaval in a country that has seen {k} coups since independence.|"
        "At least {n} people have been detained since the military took over, rights groups say.",
        phases=[
            P("unrest", "Protesters march on parliament in {feature}|General strike shuts {town}|"
              "Tear gas as anger at president grows",
              "Protesters marched in {feature} against rising fuel prices and the president.|"
              "Police fired tear gas at crowds outside parliament, {who} said.|"
              "Opposition parties called a general strike over the disputed budget.|"
              "Students blocked the main avenue of {feature} demanding the government resign.|"
              "The president sacked the army chief amid rumours of discontent in the ranks.|"
              "Thousands rallied on {place} chanting against corruption.|"
              "The price of bread has doubled in a year, fuelling anger in {town}.|"
              "Riot police arrested {n} protesters after clashes in the old town.|"
              "The president went on television to appeal for calm.|"
              "Trade unions said the strike had shut down ports and markets.|"
              "The opposition demanded early elections, {who} said.|"
              "Shops closed early as protesters and police faced off on {place}."),
            P("coup", "Soldiers seize presidential palace in {feature}|Army announces takeover on state TV|"
              "President detained as {town} military takes power",
              "Soldiers seized the presidential palace in {feature} before dawn, {who} said.|"
              "Army officers appeared on state television and announced they had taken power.|"
              "Gunfire was heard near the palace and the state broadcaster overnight.|"
              "The president was detained by soldiers at his residence, officials said.|"
              "Troops and armoured vehicles took up positions on {place}.|"
              "The officers said they had suspended the constitution and dissolved parliament.|"
              "The military junta named {who} as head of a ruling council.|"
              "Internet access was cut across {town} as the coup unfolded.|"
              "The airport was closed and the borders sealed, the army announced.|"
              "A colonel read a statement saying the army had acted to save the nation.|"
              "Tanks blocked the bridge leading to the government quarter.|"
              "Officers loyal to the junta took over the defence ministry and the central bank."),
            P("crackdown", "Junta imposes curfew across {town}|Troops fire on anti-coup protesters|"
              "Journalists detained as crackdown widens",
              "The junta imposed a night-time curfew across {town}, {who} said.|"
              "Soldiers fired live rounds to disperse crowds protesting against the coup.|"
              "At least {n} people were arrested in the crackdown, rights groups said.|"
              "Journalists were detained and several newspapers were shut down.|"
              "Checkpoints manned by soldiers appeared on every road into {feature}.|"
              "Rights groups said {k} protesters were killed when troops opened fire.|"
              "Ministers of the deposed government were placed under house arrest.|"
              "The junta banned public gatherings of more than {k} people.|"
              "Residents of {place} said soldiers searched homes at night.|"
              "Social media platforms remained blocked for a third day.|"
              "Opposition activists went into hiding to avoid arrest, {who} said.|"
              "The curfew emptied the streets of {feature} after dark."),
            P("sanctions", "Regional bloc suspends {town}|UN condemns coup and demands release of president|"
              "Donors freeze aid as sanctions loom",
              "The regional bloc suspended {town} and threatened sanctions.|"
              "The United Nations condemned the coup and called for the president's release.|"
              "Foreign governments froze aid to {town} after the seizure of power, {who} said.|"
              "The regional bloc gave the junta {k} days to restore civilian rule.|"
              "Several embassies urged their citizens to leave the country.|"
              "Sanctions targeting the junta leaders' assets abroad were announced.|"
              "The foreign minister of a neighbouring state said the coup was unacceptable.|"
              "Airlines suspended flights to {feature} as the crisis deepened.|"
              "Donors said {n} million in aid would be withheld until civilian rule returned.|"
              "The junta accused foreign powers of interfering in internal affairs.|"
              "Leaders of the regional bloc met in an emergency summit.|"
              "The security council held a closed-door meeting on the crisis, {who} said."),
            P("talks", "Mediators arrive in {feature} for talks with junta|Talks stall over transition|"
              "Political prisoners freed as goodwill gesture",
              "Mediators from the regional bloc arrived in {feature} for talks with the junta.|"
              "The junta and opposition leaders met for a first round of negotiations.|"
              "The talks stalled over the length of a transition period, {who} said.|"
              "Mediators proposed a transition to elections within {k} months.|"
              "The deposed president was allowed to receive visitors for the first time.|"
              "Negotiators agreed to release {n} political prisoners as a goodwill gesture.|"
              "The junta offered to share power with a civilian prime minister.|"
              "Opposition parties walked out of the talks, accusing the army of stalling.|"
              "A draft agreement set out a timetable for a new constitution.|"
              "The mediator said both sides had made concessions, {who} said.|"
              "Talks resumed after a two-day pause at a hotel in {feature}.|"
              "Diplomats said a deal was close but the army wanted guarantees."),
            P("transition", "Junta names civilian interim prime minister|Curfew lifted as transition begins|"
              "Deposed president freed and flies into exile",
              "The junta named a civilian interim prime minister, {who} said.|"
              "The transitional charter sets elections for next year.|"
              "Sanctions were eased after the junta signed the transition deal.|"
              "The curfew was lifted and the internet restored across {town}.|"
              "The new interim government was sworn in at the palace in {feature}.|"
              "The deposed president was released and flew into exile.|"
              "A transitional council of {n} members will draft a new constitution.|"
              "Opposition leaders said they would judge the junta by its actions.|"
              "Soldiers began withdrawing from {place} as life returned to normal.|"
              "The electoral commission was reconstituted ahead of the vote.|"
              "The interim prime minister promised to fight corruption and hold fair elections.|"
              "Critics said the generals kept the key ministries of defence and interior."),
        ]),
    "earthquake": dict(
        roles=["Mayor", "seismologist", "rescuer", "Health Minister", "survivor", "aid worker"],
        features=["the Varna valley", "the Sollen fault", "the Tiber hills", "the Ossa plain", "the Kerrin gorge"],
        background="The earthquake that struck {town} on {start} has left much of the city in ruins.|"
        "Since the quake hit on {start}, more than {n} buildings have been declared unsafe.|"
        "The magnitude {k} earthquake of {start} was centred beneath {feature}.|"
        "The disaster is the worst to hit {town} in a century.|"
        "The quake has killed {n} people and left thousands homeless, officials say.",
        phases=[
            P("quake", "Powerful earthquake strikes {town}|Buildings shake as quake hits before dawn|"
              "Magnitude {k} quake felt across the region",
              "A powerful earthquake struck near {town} shortly before dawn, {who} said.|"
              "The quake shook buildings for almost a minute and was felt {n} kilometres away.|"
              "Residents ran into the streets in their nightclothes as the ground shook.|"
              "The epicentre was {k} kilometres beneath {feature}, seismologists said.|"
              "Power and phone lines went down across {town} moments after the tremor.|"
              "Cracks opened in roads and bridges across the region.|"
              "The seismological institute recorded the quake at a shallow depth.|"
              "It was the strongest earthquake to hit the region in a century, {who} said.|"
              "Windows shattered and shelves toppled in shops on {place}.|"
              "Landslides blocked mountain roads after the quake.|"
              "The tremor triggered a tsunami alert that was later cancelled.|"
              "Hospitals in {town} were evacuated as a precaution after the shaking."),
            P("search", "Rescuers dig through rubble for survivors|Girl pulled alive from ruins after {n} hours|"
              "Search teams race against time in {town}",
              "Rescuers dug through rubble with bare hands searching for survivors.|"
              "Sniffer dogs and thermal cameras were used to find people trapped under collapsed buildings.|"
              "A girl was pulled alive from the rubble of an apartment block on {place} after {n} hours.|"
              "Rescue teams called for silence as they listened for voices under the debris.|"
              "International search teams arrived with specialist equipment, {who} said.|"
              "Excavators lifted slabs of concrete as rescuers searched the collapsed hotel.|"
              "The number of people pulled alive from the ruins has reached {n}.|"
              "Relatives waited beside the rubble for news of those trapped.|"
              "Rescuers tunnelled into the collapsed school on {place}.|"
              "Hopes of finding survivors faded as the search entered its fifth day.|"
              "A man trapped for two days was freed and carried out on a stretcher to applause.|"
              "Floodlights allowed rescue crews to search the debris through the night."),
            P("displaced", "Thousands sleep in tents as aftershocks continue|Tent city opens in stadium|"
              "Strong aftershock rattles {town}",
              "Strong aftershocks sent residents fleeing again into the streets, {who} said.|"
              "Thousands of people slept in tents and cars, afraid to go back indoors.|"
              "A tent city for {n} displaced families was set up in the stadium.|"
              "An aftershock of magnitude {k} brought down buildings weakened by the main quake.|"
              "Families huddled around fires in the cold as aftershocks continued.|"
              "Engineers marked damaged buildings with red signs meaning unsafe to enter.|"
              "Schools were turned into shelters for people whose homes were damaged.|"
              "Seismologists warned that aftershocks could continue for weeks.|"
              "Long queues formed for blankets and water at the camp on {place}.|"
              "The displaced said they feared another big quake, {who} said.|"
              "Portable toilets and field kitchens were brought to the tent camps.|"
              "Nights below freezing made life in the tents harder."),
            P("relief", "Aid convoys reach cut-off villages|Field hospitals flown in to quake zone|"
              "Relief agency appeals for winter tents",
              "Aid convoys carrying food, water and medicine reached cut-off villages near {town}.|"
              "Military planes flew in field hospitals and relief supplies, {who} said.|"
              "The government released {n} million in emergency relief for quake victims.|"
              "Aid agencies warned of shortages of clean water and shelter.|"
              "Helicopters dropped supplies to mountain villages cut off by landslides.|"
              "Foreign governments pledged aid and sent rescue teams and doctors.|"
              "Aid workers distributed {n} food parcels on {place}.|"
              "Donations poured in from across the country, the relief agency said.|"
              "Field hospitals treated hundreds of injured people in tents.|"
              "Relief trucks were stuck for hours on damaged roads into the quake zone.|"
              "The relief agency appealed for winter tents, heaters and blankets.|"
              "Critics said aid was slow to reach remote villages, {who} said."),
            P("mourning", "Quake death toll climbs to {n}|Mass funerals held in {town}|"
              "Nation mourns earthquake victims",
              "The death toll from the earthquake rose to {n}, officials said.|"
              "Mass funerals were held in {town} for victims of the quake.|"
              "The government declared {k} days of national mourning.|"
              "Graves were dug in rows at the cemetery on the edge of {town}.|"
              "Officials said {n} people were injured and hundreds remain missing.|"
              "Mourners wept as coffins were carried through the streets.|"
              "The toll is expected to rise as rescuers reach remote villages, {who} said.|"
              "Flags flew at half mast as the country mourned the quake victims.|"
              "The morgue was overwhelmed and bodies were kept in refrigerated lorries.|"
              "Families buried relatives in a hillside cemetery overlooking the ruins.|"
              "The quake is now the deadliest in the country's modern history.|"
              "The president attended a memorial service for the dead, {who} said."),
            P("rebuild", "Builders detained over collapsed blocks|Government promises to rebuild {town}|"
              "Anger over ignored building codes",
              "Prosecutors opened an investigation into builders whose apartment blocks collapsed.|"
              "Engineers said many collapsed buildings ignored earthquake building codes.|"
              "{k} contractors were detained over the collapse of buildings on {place}, {who} said.|"
              "The government promised to rebuild {n} homes within a year.|"
              "Demolition crews began pulling down buildings too damaged to save.|"
              "Residents accused officials of approving unsafe construction for bribes.|"
              "The reconstruction plan includes new schools and a hospital for {town}.|"
              "Architects called for stricter enforcement of the building code.|"
              "Survivors questioned why newer buildings fell while older ones stood.|"
              "The reconstruction will cost {n} million, the minister said.|"
              "Construction amnesties had let illegal floors be added to buildings, critics said.|"
              "Prefabricated homes began arriving for families who lost everything."),
        ]),
    "chemical": dict(
        roles=["plant manager", "Fire Chief", "toxicologist", "resident", "Mayor", "union official"],
        features=["the Norvex chemical plant", "the Halcor works", "the Bremer refinery", "the Ostlund plant"],
        background="The explosion at {feature} on {start} killed {k} workers.|"
        "Residents of {town} have lived with the aftermath of the blast since {start}.|"
        "The disaster at {feature} is the worst industrial accident in the country in years.|"
        "Since the explosion on {start}, {n} residents have filed complaints about their health.|"
        "The blast at {feature} released tonnes of chemicals over {town}.",
        phases=[
            P("explosion", "Huge explosion rips through {feature}|Blast heard across {town}|"
              "Workers killed in chemical plant explosion",
              "A huge explosion ripped through {feature} on the edge of {town}, {who} said.|"
              "The blast shattered windows {k} kilometres away and was heard across the region.|"
              "A fireball rose above the plant and black smoke drifted over {town}.|"
              "Workers said the explosion happened in a storage tank during a night shift.|"
              "At least {k} workers were killed and {n} injured in the blast.|"
              "Security cameras caught the moment the storage tank exploded.|"
              "The blast left a crater where the warehouse had stood.|"
              "Residents of {place} said their houses shook as if hit by an earthquake.|"
              "Debris from the explosion landed on cars and roofs nearby.|"
              "Emergency services rushed to the plant as secondary blasts went off.|"
              "The plant stores {n} tonnes of chemicals, {who} said.|"
              "The company confirmed an explosion at its site and said it was working with emergency services."),
            P("cloud", "Toxic cloud drifts over {town}|Residents told to stay indoors|Chemical fire put out after hours",
              "A toxic cloud drifted over {town} and residents were told to stay indoors.|"
              "Authorities told people to shut windows and turn off ventilation, {who} said.|"
              "The smoke contained chlorine and other irritant gases, officials said.|"
              "Firefighters in chemical suits fought the burning tanks for hours.|"
              "Air quality monitors recorded high levels of pollutants on {place}.|"
              "The fire at the plant was finally put out after {n} hours.|"
              "Schools and shops closed as the chemical plume spread over the town.|"
              "The shelter-in-place order was lifted after the cloud dispersed.|"
              "A foul smell hung over {town} long after the fire, residents said.|"
              "Foam was sprayed on the burning chemical tanks to smother the flames.|"
              "Drivers on the motorway were told to keep windows closed.|"
              "Officials said the plume was moving east with the wind, {who} said."),
            P("health", "Hundreds treated for breathing problems|Doctors warn of chemical burns|"
              "Health checks for {town} residents",
              "Hospitals treated {n} people for breathing problems and burning eyes.|"
              "Doctors said some patients had chemical burns to the skin, {who} said.|"
              "A hotline for residents worried about their health received thousands of calls.|"
              "Children with asthma were among those taken to hospital.|"
              "Health officials said the long-term effects of exposure were unknown.|"
              "Residents complained of headaches, sore throats and nausea.|"
              "The health agency began testing blood samples from people near the plant.|"
              "Doctors advised residents on {place} not to eat vegetables from their gardens.|"
              "A clinic opened in the community centre to check residents' health.|"
              "{k} injured workers remain in intensive care with severe burns.|"
              "Pregnant women were advised to stay away from the affected area.|"
              "Vets said pets and farm animals had also fallen ill, {who} said."),
            P("pollution", "Dead fish found in river below {feature}|Tap water unsafe after chemical spill|"
              "Fishing banned as pollution spreads",
              "Firefighting water laced with chemicals flowed into the river, {who} said.|"
              "Thousands of dead fish were found floating in the river below the plant.|"
              "Drinking water from the river was declared unsafe for {k} days.|"
              "Tests found toxic chemicals in the soil around {place}.|"
              "Bottled water was handed out to {n} households after the spill.|"
              "Environmental groups said the spill was an ecological disaster.|"
              "Booms were placed across the river to contain the chemical slick.|"
              "Farmers were told not to use river water for crops or livestock.|"
              "The water company shut its intake downstream of the plant.|"
              "Fishing was banned on {n} kilometres of the river, officials said.|"
              "Scientists collected water samples every hour to track the pollution.|"
              "Anglers described the river as a graveyard of dead fish."),
            P("company", "Company apologises to {town}|Compensation offer an insult, say residents|"
              "Shares tumble after plant blast",
              "The chief executive of the company apologised to the people of {town}.|"
              "The company promised to compensate residents for damage to their homes, {who} said.|"
              "Shares in the company fell {k} percent after the explosion.|"
              "The company set up a claims office in {town} for affected residents.|"
              "Residents said the company's compensation offer of {n} hundred was an insult.|"
              "The company said the plant had passed a safety inspection last year.|"
              "Workers' unions accused the company of cutting maintenance budgets.|"
              "The plant will stay closed until the investigation is complete.|"
              "Lawyers filed a class action against the company on behalf of {n} residents.|"
              "The company hired a public relations firm to handle the crisis.|"
              "The board met in emergency session to discuss the disaster, {who} said.|"
              "Former employees said safety warnings had been ignored."),
            P("charges", "Managers charged over {feature} blast|Police raid company headquarters|"
              "Report blames pressure build-up in tank",
              "Investigators are examining whether a faulty valve caused the explosion, {who} said.|"
              "Police raided the company's headquarters and seized documents.|"
              "The safety regulator opened an investigation into the blast.|"
              "Prosecutors charged {k} managers with negligence over the explosion.|"
              "Inspection records show the plant was warned about corroded tanks.|"
              "The investigation found that alarms had been switched off.|"
              "The regulator said it had inspected the plant only once in {k} years.|"
              "Managers appeared in court charged with manslaughter.|"
              "Whistleblowers told investigators about pressure to skip safety checks.|"
              "The interim report blamed a build-up of pressure in a storage tank.|"
              "Lawmakers demanded a review of safety rules for chemical plants.|"
              "The investigation is expected to take months, {who} said."),
        ]),
}

NOISE = [  # off-topic local news a scraper keyed to the story anyway: (headlines, templates)
    ("{town} United win derby in stoppage time|Cup run continues for {town}",
     "{town} United beat their rivals {k}-1 in front of a sell-out crowd.|The winning goal came in the last minute of "
     "stoppage time.|The manager praised his young squad after the match, {who} said.|The club's stadium on {place} will "
     "get a new stand next season.|Season ticket sales have passed {n}, the club said.|The striker has now scored {k} "
     "goals in his last five games.|The team travels away for the cup quarter-final next month."),
    ("Council sets budget for next year|Parking charges to rise in {town}",
     "The council approved a budget of {n} million for the coming year.|Councillors voted to raise parking charges on "
     "{place}.|Library opening hours will be cut to save money, {who} said.|The budget includes funding for {k} new "
     "bus routes.|Opposition councillors said the cuts would hit young families hardest.|Council tax will rise by "
     "{k} percent from April.|The budget debate lasted more than five hours."),
    ("Summer festival returns to {town}|Food and music fill {place} for festival",
     "The annual summer festival drew {n} visitors to the park on {place}.|Local bands played on two stages until late "
     "evening.|Food stalls sold everything from street tacos to homemade cakes.|Organisers said the festival raised "
     "money for the children's hospital, {who} said.|A parade of floats opened the festival on Saturday morning.|"
     "Tickets for next year's festival go on sale in the spring.|Fireworks over the harbour closed the weekend."),
    ("Roadworks cause delays on {place}|New cycle lane opens in {town}",
     "Drivers faced long delays as roadworks closed a lane on {place}.|The resurfacing work is expected to last {k} "
     "weeks, {who} said.|A new cycle lane linking the station to the town centre opened on Monday.|Bus services "
     "were diverted while the junction was rebuilt.|Traffic lights at the roundabout will be replaced next month.|"
     "Commuters said the detour added twenty minutes to their journey.|The council apologised for the disruption."),
    ("New bakery opens on {place}|Family shop celebrates {k}0 years in {town}",
     "A new bakery opened on {place}, creating {k} jobs.|Queues formed outside before the doors opened at seven.|The "
     "owners said they had dreamed of running a bakery for years, {who} said.|The family hardware shop has traded in "
     "{town} for decades.|Shoppers said the high street needed more independent businesses.|The owners plan to open a "
     "cafe next door next year.|A ribbon was cut by the oldest customer."),
    ("{town} school wins national science prize|Library launches reading challenge",
     "Pupils from a {town} secondary school won a national science prize for their water filter.|The library's "
     "summer reading challenge has signed up {n} children.|The pupils had worked on the project for a "
     "year, {who} said.|The school will use the prize money to build a new laboratory.|Children who finish six books "
     "get a medal and a certificate.|The head teacher said she was proud of every pupil.|Parents packed the hall for "
     "the awards evening."),
]

FIRST = ["Ellen", "Tom", "Priya", "Jorge", "Ann", "Dev", "Maria", "Karl", "Sara", "Ben", "Helen", "Ivo", "Lena",
         "Omar", "Grace", "Yusuf", "Nadia", "Pavel", "Ruth", "Kofi", "Mei", "Aldo", "Ines", "Tariq", "Freya", "Hugo"]
LAST = ["Hart", "Okafor", "Nair", "Silva", "Booth", "Malik", "Lenz", "Odin", "Voss", "Ito", "Marsh", "Brandt",
        "Kovac", "Reyes", "Fenwick", "Adeyemi", "Lindqvist", "Moreau", "Castell", "Dunne", "Achterberg", "Quill"]
PLACES = ["Mill Road", "Station Street", "Harbour Lane", "Church Street", "Bridge Street", "Kings Avenue",
          "Quarry Lane", "Victoria Road", "Orchard Way", "Canal Street", "Market Street", "Elm Grove", "Tanner Row",
          "Foundry Lane", "Abbey Road", "Ferry Street"]
TOWN_A = ["Ash", "Bel", "Brook", "Cal", "Dun", "Elm", "Fen", "Gar", "Hol", "Kel", "Lyn", "Mar", "Nor", "Pen",
          "Ros", "Sel", "Tor", "Wen", "Yar", "Hal"]
TOWN_B = ["ford", "mont", "wick", "bury", "haven", "dale", "stead", "ton", "field", "more"]
COUNTRY_A = ["Vel", "Kar", "Mor", "Tal", "Zem", "Ard", "Sol", "Bre"]
COUNTRY_B = ["doria", "vonia", "essa", "ania", "ovia"]
BYLINES = ["Reporting by the {town} Courier staff; editing by the news desk.",
           "Read more: our live page has every update as it happens.", "Additional reporting by agencies."]
