"""Failure classes found on held-out conversations, each pinned with sentences written for these tests (no database)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput
from tests.narrative.conftest import rules_extractor

AT = datetime(2026, 3, 9, 10, 0, tzinfo=timezone(timedelta(hours=-7)))


@pytest.fixture(scope="module")
def extractor() -> RulesExtractor:
    return rules_extractor()


def run(extractor: RulesExtractor, *texts: str) -> list[MemoryDraft]:
    turns = tuple(TurnInput(f"t{i + 1}", "coach" if i % 2 == 0 else "patient", AT + timedelta(minutes=i), t)
                  for i, t in enumerate(texts))
    return extractor.extract_session(SessionInput("s1", AT, turns))


def patient_affirmed(drafts: list[MemoryDraft], category: str) -> list[MemoryDraft]:
    return [d for d in drafts if d.category == category and d.subject == "patient" and d.assertion == "affirmed"]


def test_a_clause_final_though_does_not_end_another_persons_scope(extractor) -> None:
    drafts = run(extractor, "Hi", "My brother's sugar was sky high though, 320 this morning.")
    glucose = [d for d in drafts if d.category == "measurement"]
    assert glucose and all(d.subject == "other" for d in glucose)


def test_a_mid_sentence_though_still_ends_the_scope(extractor) -> None:
    drafts = run(extractor, "Hi", "My wife has been sick, though my own pressure was 150 over 95 today.")
    assert patient_affirmed(drafts, "measurement")


def test_quit_going_to_a_program_is_stopping_it_not_a_plan(extractor) -> None:
    drafts = run(extractor, "Hi", "I quit going to physical therapy after two sessions.")
    care = patient_affirmed(drafts, "care_activity")
    assert care and care[0].attributes["action"] == "stopped"


def test_a_future_clause_after_a_diagnosis_keeps_the_diagnosis_affirmed(extractor) -> None:
    drafts = run(extractor, "Hi", "The nurse phoned and said I have pernicious anemia, and I'm starting shots next week.")
    assert patient_affirmed(drafts, "condition")


def test_a_backward_future_still_covers_its_own_clause(extractor) -> None:
    drafts = run(extractor, "Hi", "I'm getting my knee replaced next week.")
    assert not patient_affirmed(drafts, "procedure")


def test_a_sentence_initial_name_with_a_past_verb_is_the_experiencer(extractor) -> None:
    drafts = run(extractor, "Hi", "Lucas had a bad asthma flare at school and the nurse gave him his albuterol.")
    assert not [d for d in drafts if d.subject == "patient" and d.category in ("condition", "medication")]


def test_dropping_i_at_the_start_is_still_the_patient(extractor) -> None:
    drafts = run(extractor, "Hi", "Finally had my colonoscopy, he said it was clean.")
    assert patient_affirmed(drafts, "procedure")


def test_someone_else_using_a_named_persons_inhaler_is_not_the_patient(extractor) -> None:
    drafts = run(extractor, "Hi", "Oh we were so worried, Nico had a bad asthma night and Maria had to use his inhaler.")
    assert not [d for d in drafts if d.subject == "patient" and d.category in ("condition", "medication")]


def test_an_answer_to_a_question_about_him_or_her_is_about_them(extractor) -> None:
    drafts = run(extractor, "Is she doing okay?", "Bypass. Home already, back to work in a month.")
    assert not [d for d in drafts if d.subject == "patient" and d.category == "procedure"]


def test_a_question_about_him_does_not_capture_the_patients_own_statement(extractor) -> None:
    drafts = run(extractor, "Is he doing okay?", "Yeah. But I had chest pain myself last night.")
    assert patient_affirmed(drafts, "symptom")


def test_a_skin_eruption_after_an_unnamed_antibiotic_is_a_suspected_allergy(extractor) -> None:
    drafts = run(extractor, "Hi", "Urgent care put me on an antibiotic for my sinuses, one twice a day.",
                 "How is it going with it?", "Awful. Friday I broke out in itchy bumps on my neck and my eyelids swelled.")
    allergy = patient_affirmed(drafts, "allergy")
    assert allergy and allergy[0].attributes["substance"] == "antibiotic"


def test_the_pills_plural_is_not_the_contraceptive_pill(extractor) -> None:
    drafts = run(extractor, "Hi", "My stomach hurt so I stopped the pills.")
    meds = [d for d in drafts if d.category == "medication"]
    assert meds and all(d.attributes.get("drug_class") != "hormonal contraceptive" for d in meds)


def test_a_reading_before_a_glucose_device_name_is_a_glucose_measurement(extractor) -> None:
    drafts = run(extractor, "Hi", "woke up shaky, was 58 on my cgm so I had some juice")
    glucose = [d for d in patient_affirmed(drafts, "measurement") if d.attributes["kind"] == "glucose"]
    assert glucose and glucose[0].attributes["value"] == 58


def test_a_number_at_the_end_of_a_sentence_is_still_read(extractor) -> None:
    drafts = run(extractor, "Hi", "I checked my sugar after lunch and it said 212.")
    assert [d for d in patient_affirmed(drafts, "measurement") if d.attributes.get("value") == 212]


def test_an_inr_device_reading_later_in_the_turn_is_an_inr(extractor) -> None:
    drafts = run(extractor, "Hi", "My new INR monitor came in the mail, so I poked my finger tonight and it read 3.8!")
    inr = [d for d in patient_affirmed(drafts, "measurement") if d.attributes["kind"] == "inr"]
    assert inr and inr[0].attributes["value"] == 3.8


def test_current_smoking_is_also_a_condition_and_relapse_is_marked(extractor) -> None:
    drafts = run(extractor, "Hi", "I'm back on the cigarettes, maybe half a pack a day since the layoff.")
    cond = [d for d in patient_affirmed(drafts, "condition") if d.attributes["name"] == "tobacco use"]
    assert cond and cond[0].attributes["stated_status"] == "relapsed"
    meas = [d for d in drafts if d.category == "measurement" and d.attributes["kind"] == "tobacco_use"]
    assert meas and meas[0].attributes["value"] == 0.5


def test_former_or_someone_elses_smoking_is_not_the_patients_condition(extractor) -> None:
    assert not [d for d in patient_affirmed(run(extractor, "Hi", "I quit smoking ten years ago."), "condition")]
    assert not [d for d in patient_affirmed(run(extractor, "Hi", "My husband smokes a pack a day."), "condition")]


def test_object_before_the_verb_procedures(extractor) -> None:
    drafts = run(extractor, "Hi", "i finally had my implant taken out on friday at the clinic, arm is sore.")
    proc = patient_affirmed(drafts, "procedure")
    assert proc and proc[0].attributes["name"] == "removal of implant"
    assert not patient_affirmed(run(extractor, "Hi", "I got the car fixed and the trash taken out."), "procedure")


@pytest.mark.parametrize("text", [
    "Sometimes I wish I could just go to sleep and not wake up.",
    "honestly some days i feel like my kids would be better off if i wasn't around. i won't do anything.",
    "I've been having thoughts of hurting myself at night.",
])
def test_suicidal_ideation_is_a_patient_condition(extractor, text: str) -> None:
    si = [d for d in patient_affirmed(run(extractor, "Hi", text), "condition") if d.attributes["name"] == "suicidal ideation"]
    assert si


@pytest.mark.parametrize("text", ["I would never hurt myself, don't worry.", "My brother says he wants to die, it scares me."])
def test_denial_or_another_persons_words_are_not_patient_suicidal_ideation(extractor, text: str) -> None:
    assert not [d for d in patient_affirmed(run(extractor, "Hi", text), "condition") if d.attributes["name"] == "suicidal ideation"]


def test_a_name_qualified_by_a_place_is_another_person(extractor) -> None:
    drafts = run(extractor, "Hi", "Ellen from church takes Ozempic and lost 30 lbs.")
    assert not [d for d in drafts if d.subject == "patient" and d.category in ("medication", "measurement")]


def test_a_place_phrase_without_a_person_verb_keeps_the_patient(extractor) -> None:
    drafts = run(extractor, "Hi", "Lunch at work has been salads, my sugar was 130.")
    assert patient_affirmed(drafts, "measurement")


def test_family_history_is_the_relatives_condition(extractor) -> None:
    drafts = run(extractor, "Hi", "Diabetes runs on both sides of my family.")
    assert not [d for d in drafts if d.subject == "patient" and d.category == "condition"]


def test_family_history_then_the_patients_own_condition(extractor) -> None:
    drafts = run(extractor, "Hi", "Heart disease runs in my family and now I have high blood pressure too.")
    own = patient_affirmed(drafts, "condition")
    assert [d.attributes["name"] for d in own] == ["hypertension"]


@pytest.mark.parametrize("text,action", [
    ("I told them at the clinic I'm done with the heart class.", "stopped"),
    ("I stopped going to my diabetes classes.", "stopped"),
    ("I skipped my pulmonary class twice this month.", "skipped"),
])
def test_a_care_program_named_by_its_form_is_a_care_activity(extractor, text: str, action: str) -> None:
    care = patient_affirmed(run(extractor, "Hi", text), "care_activity")
    assert care and care[0].attributes["action"] == action


def test_an_everyday_group_outing_is_not_a_care_program(extractor) -> None:
    assert not patient_affirmed(run(extractor, "Hi", "I'm going to a birthday party group thing."), "care_activity")


@pytest.mark.parametrize("text", ["Started paleo with my wife 3 weeks ago, no grains.", "Went vegan last month.",
                                  "trying the mediterranean diet since new year"])
def test_named_diets_are_diet_care_activities(extractor, text: str) -> None:
    care = patient_affirmed(run(extractor, "Hi", text), "care_activity")
    assert care and care[0].attributes["name"] == "diet"


def test_an_everyday_word_one_edit_from_a_brand_is_not_a_drug(extractor) -> None:
    drafts = run(extractor, "Hi", "I really like the new walking program at the Y.")
    assert not [d for d in drafts if d.category == "medication"]


def test_a_quoted_diagnosis_is_read_and_a_trailing_clause_is_not_a_condition(extractor) -> None:
    drafts = run(extractor, "Hi", "had my checkup tues and the foot dr said i have 'mild peripheral vasculopathy' in my left foot?? "
                                  "she said it's early and to keep my sugars down")
    names = [d.attributes["name"] for d in drafts if d.category == "condition"]
    assert names == ["peripheral vasculopathy"]
    assert patient_affirmed(drafts, "condition")


@pytest.mark.parametrize("text,name,status", [
    ("Reflux's gone completely. So I dropped the Nexium in June.", "gerd", "resolved"),
    ("My asthma's been acting up with the smoke.", "asthma", "worse"),
])
def test_a_contracted_is_on_a_condition_keeps_the_condition(extractor, text: str, name: str, status: str) -> None:
    cond = [d for d in patient_affirmed(run(extractor, "Hi", text), "condition") if d.attributes["name"] == name]
    assert cond and cond[0].attributes["stated_status"] == status


def test_wildfire_smoke_is_not_smoking_but_i_smoke_is(extractor) -> None:
    assert not [d for d in run(extractor, "Hi", "My asthma's been acting up with the smoke.") if d.attributes.get("name") == "tobacco use"]
    assert [d for d in patient_affirmed(run(extractor, "Hi", "I smoke when I'm stressed."), "condition")
            if d.attributes["name"] == "tobacco use"]


def test_someone_elses_pills_handed_to_the_patient_are_the_patients(extractor) -> None:
    drafts = run(extractor, "Hi", "My cousin Dee had a bottle of leftover pain pills, so she gave me a few and I've been taking one at night.")
    meds = patient_affirmed(drafts, "medication")
    assert meds and meds[0].attributes["source"] == "someone_else" and meds[0].attributes["owner"]


def test_another_persons_own_medication_stays_theirs(extractor) -> None:
    drafts = run(extractor, "Hi", "My sister takes Xanax and she says it helps her sleep.")
    assert not patient_affirmed(drafts, "medication")


def test_a_symptom_that_is_the_reason_for_a_drug_is_not_a_reaction_and_the_episode_spans_turns(extractor) -> None:
    drafts = run(extractor, "How was your week?",
                 "My neighbor Jan gave me a few of her water pills and I've been taking one when my ankles swell.",
                 "Do you know which ones?",
                 "Lasix I think? I took one Monday and one yesterday. My tongue felt itchy and kind of swollen this morning.")
    allergies = patient_affirmed(drafts, "allergy")
    assert [a.anchor_turn_id for a in allergies] == ["t4"]
    assert allergies[0].attributes["substance"] == "furosemide" and "t2" in allergies[0].turn_ids


@pytest.mark.parametrize("text,action", [("I'll be honest, I stopped the metformin a month ago.", "stopped"),
                                         ("I will confess I skipped my Eliquis twice.", "skipped")])
def test_a_discourse_frame_with_will_is_not_a_future(extractor, text: str, action: str) -> None:
    meds = patient_affirmed(run(extractor, "Hi", text), "medication")
    assert meds and meds[0].attributes["action"] == action


def test_will_be_starting_is_still_a_plan(extractor) -> None:
    assert not patient_affirmed(run(extractor, "Hi", "I will be starting insulin next month."), "medication")


@pytest.mark.parametrize("text,direction", [("I've been taking two of my water pills instead of one since Friday.", "more"),
                                            ("lately i just do half a tablet of the metoprolol instead of a whole one", "less")])
def test_instead_of_is_a_self_made_dose_change(extractor, text: str, direction: str) -> None:
    meds = patient_affirmed(run(extractor, "Hi", text), "medication")
    assert meds and meds[0].attributes["action"] == "changed_dose" and meds[0].attributes["dose_change"] == direction


def test_doubling_up_is_a_dose_change(extractor) -> None:
    meds = patient_affirmed(run(extractor, "Hi", "I've been doubling up on my Lasix when my legs puff up."), "medication")
    assert meds and meds[0].attributes["action"] == "changed_dose"


def test_a_sentence_without_its_own_experiencer_after_someone_elses_health_is_theirs(extractor) -> None:
    drafts = run(extractor, "Hi", "Took Dad to his checkup. BP was 170/95 so they added amlodipine.")
    assert not [d for d in drafts if d.subject == "patient" and d.category in ("measurement", "medication")]


def test_a_visit_that_is_not_about_health_does_not_take_the_patients_reading(extractor) -> None:
    assert patient_affirmed(run(extractor, "Hi", "My sister visited this weekend. Sugar was 140 this morning."), "measurement")


@pytest.mark.parametrize("text", ["Bob from work got diagnosed with diabetes, he's on metformin.",
                                  "Sara finally had her surgery, she's doing well."])
def test_initial_names_with_a_place_or_an_adverb_are_other_people(extractor, text: str) -> None:
    assert not [d for d in run(extractor, "Hi", text) if d.subject == "patient" and d.category in ("condition", "medication", "procedure")]


def test_an_initial_capital_without_a_later_pronoun_stays_the_patients_sentence(extractor) -> None:
    assert patient_affirmed(run(extractor, "Hi", "Work from home was fine, my sugar was 130 though."), "measurement")


def test_first_person_inside_another_persons_quoted_words_is_them(extractor) -> None:
    drafts = run(extractor, "Hi", 'My sister said "I have been on Lexapro for years and it is great".')
    assert not patient_affirmed(drafts, "medication")


@pytest.mark.parametrize("text", ["We started the new inhaler for Timmy last week.",
                                  "The baby has an ear infection, she's on amoxicillin."])
def test_children_and_named_beneficiaries_are_other_people(extractor, text: str) -> None:
    assert not [d for d in run(extractor, "Hi", text) if d.subject == "patient" and d.category in ("condition", "medication")]


def test_baby_aspirin_is_still_the_patients_drug(extractor) -> None:
    assert patient_affirmed(run(extractor, "Hi", "I take a baby aspirin every day."), "medication")


def test_a_sentence_ending_on_the_person_asked_about_carries_into_the_next(extractor) -> None:
    drafts = run(extractor, "How's your husband doing?", "I'm so worried about him. Sugar was 300 yesterday and he won't take the insulin.")
    assert not [d for d in drafts if d.subject == "patient" and d.category in ("measurement", "medication")]


def test_the_patient_turning_to_themself_keeps_their_reading(extractor) -> None:
    drafts = run(extractor, "How's your wife?", "She's good. I'm doing ok too. Sugar was 140 this morning.")
    assert patient_affirmed(drafts, "measurement")


def test_past_tense_were_is_not_a_typed_we_are(extractor) -> None:
    drafts = run(extractor, "Hi", "Mom's numbers were 180/110 at the ER.")
    assert not [d for d in drafts if d.subject == "patient" and d.category == "measurement"]
    assert patient_affirmed(run(extractor, "Hi", "were doing ok, sugar was 120 this morning."), "measurement")


def test_the_patients_device_used_on_someone_else_does_not_make_it_the_patients_reading(extractor) -> None:
    drafts = run(extractor, "Hi", "Checked my dad's pressure with my cuff - 165/100!")
    assert not [d for d in drafts if d.subject == "patient" and d.category == "measurement"]
    assert patient_affirmed(run(extractor, "Hi", "Checked my pressure with my cuff, 150/95."), "measurement")


@pytest.mark.parametrize("text", ["People at church keep telling me about Ozempic.", "I read that statins cause memory loss.",
                                  "I saw a commercial for Jardiance last night."])
def test_hearsay_and_media_mentions_are_not_use(extractor, text: str) -> None:
    assert not patient_affirmed(run(extractor, "Hi", text), "medication")


@pytest.mark.parametrize("text", ["A lot of people my age get shingles.", "My doctor's nurse takes Lipitor too, she says it's fine."])
def test_generic_people_and_a_clinicians_own_health_are_not_the_patients(extractor, text: str) -> None:
    assert not [d for d in run(extractor, "Hi", text) if d.subject == "patient" and d.category in ("condition", "medication")]


@pytest.mark.parametrize("text,action", [("My doctor has me on Lipitor now.", "taking"), ("The doctor took me off Plavix.", "stopped")])
def test_a_clinician_acting_on_the_patient_keeps_the_patient(extractor, text: str, action: str) -> None:
    meds = patient_affirmed(run(extractor, "Hi", text), "medication")
    assert meds and meds[0].attributes["action"] == action


def test_effects_in_the_patients_next_message_link_to_the_change(extractor) -> None:
    texts = ("How did you manage without the pump?",
             "i just took novolog shots when i ate, no long acting at all, ran out of my tresiba lol",
             "woke up monday super nauseous and so thirsty, sugars were 350s")
    speakers = ("coach", "patient", "patient")
    turns = tuple(TurnInput(f"t{i + 1}", sp, AT + timedelta(minutes=i), t) for i, (sp, t) in enumerate(zip(speakers, texts)))
    drafts = extractor.extract_session(SessionInput("s1", AT, turns))
    stopped = [d for d in patient_affirmed(drafts, "medication") if d.attributes["action"] == "stopped"]
    assert stopped and "t3" in stopped[0].turn_ids and stopped[0].attributes.get("effects")


def test_not_having_a_drug_anymore_is_stopping_it(extractor) -> None:
    meds = patient_affirmed(run(extractor, "Hi", "i don't even have my tresiba anymore lol"), "medication")
    assert meds and meds[0].attributes["action"] == "stopped"


def test_habitually_eating_an_allergen_food_is_a_tolerance_statement(extractor) -> None:
    allergy = patient_affirmed(run(extractor, "What do you eat before work?",
                                   "honestly I have peanut butter on toast every morning"), "allergy")
    assert allergy and allergy[0].attributes["substance"] == "peanut" and allergy[0].attributes["stated_status"] == "tolerated"


def test_someone_else_eating_it_or_avoiding_it_is_no_tolerance(extractor) -> None:
    for text in ("my son eats peanut butter every day", "I avoid peanuts."):
        assert not patient_affirmed(run(extractor, "Hi", text), "allergy")


@pytest.mark.parametrize("question,answer", [
    ("How is Maria doing after her surgery?", "Better. Still on oxycodone for the pain, and her BP was high."),
    ("Did Tom's scan come back?", "Yes, they found a small clot, he's on Eliquis now."),
])
def test_an_answer_to_a_question_about_a_named_person_is_about_them(extractor, question: str, answer: str) -> None:
    drafts = run(extractor, question, answer)
    assert not [d for d in drafts if d.subject == "patient" and d.category in ("medication", "measurement", "symptom")]


@pytest.mark.parametrize("question", ["Hi Walt, how are you?", "How are you, Walt?", "How was Christmas?"])
def test_a_vocative_name_or_a_holiday_in_the_question_keeps_the_patient(extractor, question: str) -> None:
    assert patient_affirmed(run(extractor, question, "Good. My sugar was 140."), "measurement")


@pytest.mark.parametrize("text", ["My ex-husband has diabetes and won't take his metformin.",
                                  "My better half started Ozempic last month.", "My step-dad's A1c was 9.5."])
def test_compound_and_idiomatic_relations_are_other_people(extractor, text: str) -> None:
    assert not [d for d in run(extractor, "Hi", text) if d.subject == "patient" and d.category in ("condition", "medication", "measurement")]


def test_a_hyphenated_word_that_is_not_a_relation_keeps_the_patient(extractor) -> None:
    assert patient_affirmed(run(extractor, "Hi", "I had a half-day at work, sugar was 150."), "measurement")


def test_a_neutral_follow_up_question_keeps_the_other_persons_health_event(extractor) -> None:
    drafts = run(extractor, "Hi", "My brother was in the hospital this week.", "Oh no, what happened?",
                 "Heart attack. Two stents, and a new blood thinner.")
    assert not [d for d in drafts if d.subject == "patient" and d.category in ("condition", "procedure", "medication")]


def test_a_follow_up_that_turns_to_the_patient_or_a_visit_without_health_news_keeps_the_patient(extractor) -> None:
    drafts = run(extractor, "Hi", "My brother was in the hospital this week.", "Oh no! How are you holding up?",
                 "Not great, my sugar was 250 from stress.")
    assert patient_affirmed(drafts, "measurement")
    drafts = run(extractor, "Hi", "My mom is visiting.", "How nice! How is everything?", "Good. Blood pressure was 150/90 this morning.")
    assert patient_affirmed(drafts, "measurement")


def test_someone_else_taking_the_patients_drug_is_them_taking_it(extractor) -> None:
    drafts = run(extractor, "Hi", "I just found out my brother has been taking my oxycodone.")
    assert not patient_affirmed(drafts, "medication")
    assert patient_affirmed(run(extractor, "Hi", "My wife reminded me and I took my insulin."), "medication")
