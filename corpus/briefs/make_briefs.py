"""Writes one brief file per author: persona + clinical brief + the phenomena each patient must cover."""
import random
from pathlib import Path

CLINICAL = [
 # (specialty, age, sex, picture)
 ("cardiology", "71", "m", "atrial fibrillation on warfarin (INR monitored), hypertension, benign prostatic hyperplasia, osteoarthritis of the knee"),
 ("cardiology", "64", "f", "heart failure with reduced ejection fraction (sacubitril-valsartan, carvedilol, spironolactone, furosemide, dapagliflozin), type 2 diabetes, daily weights in the care plan"),
 ("cardiology", "58", "m", "coronary artery disease with two drug-eluting stents last year on aspirin + ticagrelor, atorvastatin 80, metoprolol; smoker trying to quit"),
 ("cardiology", "77", "f", "atrial fibrillation on apixaban, CKD stage 3a, hypothyroidism, osteoporosis, history of falls"),
 ("cardiology", "52", "m", "resistant hypertension on amlodipine, chlorthalidone, lisinopril; obesity; obstructive sleep apnea with CPAP prescribed; gout"),
 ("nephrology", "66", "m", "CKD stage 4 from diabetic nephropathy, type 2 diabetes on insulin glargine, hyperkalemia history, renal diet and fluid advice in the care plan, anemia of CKD"),
 ("nephrology", "49", "f", "hemodialysis three times a week (end-stage kidney disease from lupus nephritis), phosphate binder, cinacalcet, fluid restriction, hydroxychloroquine"),
 ("transplant", "57", "m", "kidney transplant 4 years ago on tacrolimus, mycophenolate, low-dose prednisone; hypertension; post-transplant diabetes"),
 ("transplant", "44", "f", "liver transplant (autoimmune hepatitis) on tacrolimus and everolimus; osteopenia; no alcohol in the care plan"),
 ("oncology", "62", "f", "breast cancer in remission on anastrozole after lumpectomy and radiation; osteoporosis on alendronate weekly; hot flashes; lymphedema sleeve prescribed"),
 ("oncology", "68", "m", "colon cancer on oral capecitabine cycles (two weeks on, one off); neuropathy; warfarin for a past DVT was switched to enoxaparin injections"),
 ("oncology", "55", "f", "chronic myeloid leukemia on imatinib; hypothyroidism; depression on escitalopram"),
 ("HIV", "39", "m", "HIV on bictegravir/emtricitabine/tenofovir alafenamide, undetectable; anxiety; hyperlipidemia; past syphilis treated"),
 ("HIV", "51", "f", "HIV on darunavir/cobicistat plus dolutegravir; hepatitis B co-infection; type 2 diabetes on metformin; statin"),
 ("pregnancy", "31", "f", "pregnant, second trimester at start, gestational diabetes on diet then insulin, history of migraine, iron deficiency anemia, prenatal vitamins"),
 ("pregnancy", "27", "f", "pregnant with hyperemesis early on (ondansetron), chronic hypertension switched to labetalol, low-dose aspirin from 12 weeks; asthma"),
 ("postpartum", "34", "f", "six weeks postpartum after cesarean, postpartum depression on sertraline, breastfeeding, hypothyroidism on levothyroxine"),
 ("psychiatry", "45", "m", "bipolar I disorder on lithium (levels monitored) and quetiapine; hypertension on lisinopril; hypothyroidism from lithium"),
 ("psychiatry", "29", "f", "schizophrenia on clozapine (blood count monitoring), weight gain, prediabetes, smoker"),
 ("psychiatry", "61", "m", "major depression on sertraline and trazodone, alcohol use disorder in early remission on naltrexone, hypertension"),
 ("neurology", "38", "f", "epilepsy on lamotrigine and levetiracetam, on combined oral contraceptive, migraine"),
 ("neurology", "72", "m", "Parkinson's disease on carbidopa-levodopa and rasagiline, orthostatic hypotension, constipation, falls"),
 ("neurology", "43", "f", "relapsing multiple sclerosis on an injectable disease-modifying therapy (glatiramer), bladder symptoms on oxybutynin, depression"),
 ("neurology/dementia", "81", "f", "mild Alzheimer dementia on donepezil; atrial fibrillation on apixaban; the adult daughter often speaks for her"),
 ("GI/liver", "59", "m", "alcohol-related cirrhosis with varices on propranolol, spironolactone and furosemide, lactulose, alcohol use disorder in remission, low-sodium diet"),
 ("GI", "33", "f", "Crohn's disease on adalimumab injections every two weeks and azathioprine; iron deficiency; vitamin D deficiency"),
 ("GI", "47", "m", "ulcerative colitis on mesalamine, GERD on omeprazole, history of a GI bleed from NSAIDs"),
 ("rheumatology", "56", "f", "rheumatoid arthritis on weekly methotrexate with folic acid, etanercept; hypertension; osteopenia"),
 ("rheumatology", "63", "m", "gout on allopurinol and colchicine, CKD stage 3, hypertension on losartan, type 2 diabetes"),
 ("rheumatology", "41", "f", "systemic lupus on hydroxychloroquine and low-dose prednisone, Raynaud's, history of a blood clot on warfarin"),
 ("endocrinology", "24", "m", "type 1 diabetes on an insulin pump with a continuous glucose monitor, celiac disease (gluten-free diet in the plan), ADHD"),
 ("endocrinology", "68", "f", "type 2 diabetes on metformin, glipizide and weekly semaglutide; hypertension; diabetic neuropathy; foot care plan"),
 ("endocrinology", "50", "f", "hypothyroidism after thyroidectomy on levothyroxine, adrenal insufficiency on hydrocortisone (sick-day rules in the plan), osteoporosis"),
 ("endocrinology", "36", "m", "type 2 diabetes with obesity on insulin degludec and empagliflozin, fatty liver, hyperlipidemia"),
 ("lung", "69", "m", "COPD with home oxygen 2 L, tiotropium, budesonide-formoterol, albuterol rescue; ex-smoker; pulmonary rehab in the plan"),
 ("lung", "19", "f", "moderate persistent asthma on fluticasone-salmeterol and albuterol, allergic rhinitis, peanut allergy with an epinephrine auto-injector"),
 ("lung/sleep", "55", "m", "severe obstructive sleep apnea with CPAP, hypertension, atrial fibrillation on diltiazem and rivaroxaban, obesity"),
 ("geriatrics", "84", "m", "polypharmacy: hypertension, type 2 diabetes, BPH on tamsulosin, insomnia, chronic pain, mild cognitive impairment, history of falls with a walker in the plan"),
 ("geriatrics", "79", "f", "osteoporosis with a prior hip fracture, hypertension, overactive bladder, macular degeneration, lives alone, son helps with pills"),
 ("adolescent", "16", "m", "type 1 diabetes on multiple daily injections, ADHD on methylphenidate, sports; a parent sometimes joins the chat"),
 ("adolescent", "17", "f", "anorexia nervosa in recovery with weight checks in the plan, depression on fluoxetine, iron deficiency"),
 ("cardiology", "66", "f", "mechanical aortic valve on warfarin (higher INR target), hypertension, hypothyroidism"),
 ("cardiology", "73", "m", "heart failure with preserved EF, atrial fibrillation on dabigatran, CKD 3b, type 2 diabetes, fluid restriction 1.5 L in the plan"),
 ("nephrology", "70", "f", "CKD stage 3b from hypertension, on losartan and spironolactone (potassium watched), gout, avoid NSAIDs in the plan"),
 ("transplant", "35", "m", "heart transplant 2 years ago on tacrolimus, mycophenolate and prednisone, cytomegalovirus prophylaxis finished, hyperlipidemia on pravastatin"),
 ("oncology", "74", "m", "prostate cancer on androgen deprivation (leuprolide injections) and abiraterone with prednisone, osteoporosis, hypertension"),
 ("oncology", "48", "f", "ovarian cancer on maintenance olaparib, anemia, nausea, anxiety on lorazepam as needed"),
 ("HIV", "58", "m", "HIV on a once-daily single-tablet regimen, coronary artery disease on clopidogrel and rosuvastatin, depression"),
 ("psychiatry", "52", "f", "generalized anxiety and panic on venlafaxine, clonazepam as needed, chronic insomnia, migraine on sumatriptan"),
 ("psychiatry", "23", "m", "ADHD on lisdexamfetamine, cannabis use, social anxiety, acne treated with isotretinoin last year"),
 ("neurology", "67", "m", "prior ischemic stroke with mild left weakness on clopidogrel and atorvastatin, hypertension, dysphagia diet in the plan, uses a cane"),
 ("neurology", "30", "f", "chronic migraine on topiramate and erenumab, depression, planning pregnancy"),
 ("GI/liver", "54", "f", "primary biliary cholangitis on ursodiol, hypothyroidism, osteoporosis, pruritus on cholestyramine"),
 ("GI", "76", "m", "diverticular disease with a past bleed, atrial fibrillation on apixaban, GERD, chronic constipation"),
 ("rheumatology", "60", "f", "polymyalgia rheumatica on a prednisone taper, type 2 diabetes, glaucoma, osteoporosis on weekly alendronate"),
 ("endocrinology", "62", "m", "type 2 diabetes on basal-bolus insulin with frequent lows, hypertension, CKD 3a, retinopathy, lives alone"),
 ("endocrinology", "39", "f", "Graves' disease on methimazole, palpitations on propranolol, planning pregnancy"),
 ("lung", "74", "f", "COPD and bronchiectasis with frequent exacerbations, azithromycin three times a week, osteoporosis, anxiety"),
 ("lung", "46", "m", "pulmonary embolism 5 months ago on rivaroxaban, asthma, obesity; plan says no long flights without moving, compression stockings"),
 ("geriatrics", "88", "f", "advanced age with heart failure, CKD, dementia in a family member's care; hearing loss; the granddaughter types some replies"),
 ("geriatrics", "80", "m", "Parkinsonism and diabetes, lives with wife; wife manages his pill box and often answers for him"),
 ("cardiology", "47", "f", "familial hypercholesterolemia on rosuvastatin and evolocumab injections, hypertension, prior TIA on aspirin"),
 ("pregnancy", "38", "f", "pregnant after IVF, history of DVT on enoxaparin injections through pregnancy, hypothyroidism, advanced maternal age"),
 ("nephrology", "58", "m", "peritoneal dialysis at home, diabetes, hypertension, phosphate binder with meals, strict fluid and potassium limits"),
 ("HIV/hepatitis", "44", "m", "HIV on a two-drug regimen, hepatitis C cured last year, opioid use disorder on buprenorphine-naloxone, depression"),
 ("rheumatology", "35", "m", "ankylosing spondylitis on a TNF inhibitor (adalimumab), uveitis history, uses naproxen as the plan allows, smoker"),
]

VOICES = [
 "texting young adult: lowercase, slang, emoji, abbreviations (idk, rn, ngl), short bursts",
 "older adult who tells long stories and wanders before getting to the point",
 "low health literacy: names drugs by colour, size or purpose ('the little white one for my heart', 'the water pill'), unsure of names",
 "non-native English speaker: simple grammar, some word-order slips, occasional word from their first language",
 "voice-to-text errors: homophones, run-on sentences, misheard and misspelled drug names",
 "terse: one-line answers, rarely volunteers anything unless asked",
 "rambler who buries the important fact in the middle of a long turn about other things",
 "a patient whose spouse or adult child speaks in some turns (the text says who is talking, e.g. 'this is her son typing')",
 "jokes and understates ('no biggie', 'my body is a science experiment'), sarcastic about medicine",
 "anxious and detailed: asks many questions, over-explains, apologises",
 "busy professional: brisk, uses some medical words correctly and some wrongly",
 "formal and polite, a little old-fashioned, uses brand names",
]

PHENOMENA = [
 ("medication", "stopped a drug, said in everyday words, slang, a euphemism or a joke"),
 ("medication", "pausing a drug for a while ('a break', 'holiday') without telling the prescriber"),
 ("medication", "partial adherence: one of two daily doses, a few days a week, or only when symptoms bother them"),
 ("medication", "taking a half dose or cutting pills, or stretching a supply"),
 ("medication", "extra doses or doubling up"),
 ("medication", "wrong schedule (e.g. a weekly drug taken daily, a morning drug at night with a reason that matters)"),
 ("medication", "a dose or drug changed by an outside prescriber (specialist, urgent care, hospital elsewhere) that the record lacks"),
 ("medication", "a new prescription from urgent care, an emergency room, a dentist or a telehealth visit that interacts or matters"),
 ("medication", "an over-the-counter drug that matters with the record (NSAID with anticoagulant/antiplatelet/CKD/heart failure, decongestant with hypertension, antihistamine in the elderly, antacid binding a drug...)"),
 ("medication", "a supplement or herbal that matters with the record (St John's wort, potassium, turmeric, ginkgo, red yeast rice, grapefruit juice, high-dose vitamin K greens...)"),
 ("medication", "someone else's prescription taken (a relative's opioid, steroid, antibiotic, sleeping pill)"),
 ("medication", "the drug named by its class or purpose in one sentence and by name or 'it' later, or split across a coach question and the answer"),
 ("medication", "a misspelled or garbled brand name"),
 ("condition", "a red-flag symptom in lay words that is dangerous given the record (bleeding on an anticoagulant, a head bump on a blood thinner, fever on immunosuppression, new confusion or hallucinations, a darkening foot sore in diabetes, fast weight gain and swelling in heart failure, chest pressure on exertion, fainting, thoughts of self-harm...)"),
 ("condition", "a new diagnosis made elsewhere that the record lacks"),
 ("condition", "a recorded active condition the patient says is gone or resolved"),
 ("condition", "smoking, vaping or alcohol status changed (quit with gum or vaping, relapse in a disorder in remission)"),
 ("condition", "a new symptom that is not acute but a clinician would want to know (side effect of a listed drug, weight loss without trying, new shortness of breath)"),
 ("allergy", "a new reaction to a drug or food (rash, swelling, hives) not in the record"),
 ("allergy", "a recorded allergy the patient says was never theirs (a relative's, a side effect mislabelled) or has been tolerated since"),
 ("observation", "home blood pressure readings given as numbers that cross a threshold or trend"),
 ("observation", "home glucose readings, lows or highs, as numbers"),
 ("observation", "home weights in lb or kg, compared with earlier values (fast gain, or loss without trying)"),
 ("observation", "another home reading (oxygen saturation, pulse, INR from a clinic elsewhere, peak flow, temperature) that matters"),
 ("procedure", "a procedure done elsewhere described in lay words or slang (scope, 'balloon in my heart', 'laser on my eye'), with a year or place, possibly abroad"),
 ("immunization", "a vaccine at a pharmacy or work clinic, named loosely, with a month, year or place"),
 ("careplan", "a prescribed device not used (CPAP, cane/walker, compression stockings, brace, spacer, glucose sensor, oxygen)"),
 ("careplan", "exertion, activity, travel or altitude the care plan forbids or limits"),
 ("careplan", "a diet in the plan not kept, described only by the foods eaten (salt, potassium, fluids, carbs, gluten, vitamin K...)"),
 ("careplan", "alcohol or another substance the plan says to avoid"),
]

TRAPS = [
 "another person's health or drug, including 'my' before someone else's pill ('my husband's blood thinner')",
 "a negation that sounds clinical ('no chest pain since', 'haven't had a single low')",
 "a hypothetical or plan ('if it gets worse I'll stop it', 'thinking about asking for...')",
 "a past event already in the record, mentioned again",
 "a statement that agrees with the record (taking a listed drug as prescribed, a reading in range)",
 "hearsay or media ('my neighbour says statins are poison', 'saw on TV that...')",
 "the coach's own words mentioning a drug or condition, with a neutral patient reply",
]

AUTHORS = {
    # round 1
    "ava": 6, "ben": 6, "cal": 6, "dee": 6, "eli": 6, "fay": 6,
    # round 2
    "gus": 6, "hal": 6, "ivy": 6, "jon": 6, "kit": 6,
}

# Round 3 (validation split "val"): new clinical pictures and four new authors, dealt with their own seed so
# rounds 1-2 stay byte-identical; every patient gets the full 8 phenomena (rounds 1-2 sometimes dealt fewer when
# the cycle ran short of a category).
CLINICAL_ROUND3 = [
 ("cardiology", "62", "m", "atrial fibrillation on amiodarone and warfarin, hypothyroidism from amiodarone on levothyroxine, hypertension, prior pacemaker"),
 ("vascular", "67", "m", "peripheral artery disease with calf claudication on cilostazol and aspirin, type 2 diabetes on metformin, current smoker, foot care and walking programme in the plan"),
 ("hematology", "26", "f", "sickle cell disease on hydroxyurea and folic acid, chronic pain with oxycodone as needed, hydration advice in the plan, on a progestin-only contraceptive"),
 ("addiction", "42", "m", "opioid use disorder on methadone from a clinic, chronic hepatitis C untreated, QTc watched on ECGs, chronic low back pain, depression"),
 ("oncology", "59", "f", "EGFR lung cancer on osimertinib, brain metastases treated with radiation, seizure on levetiracetam, dexamethasone taper, DVT on apixaban"),
 ("bariatric", "45", "f", "Roux-en-Y gastric bypass 3 years ago, vitamin B12 injections, vitamin D and calcium, avoid NSAIDs in the plan, depression on bupropion, prior type 2 diabetes now resolved"),
 ("neurology", "53", "f", "myasthenia gravis on pyridostigmine and azathioprine, thymectomy in the past, hypertension; plan lists drugs that can worsen weakness"),
 ("dermatology/rheumatology", "48", "m", "psoriasis with psoriatic arthritis on weekly methotrexate and ustekinumab injections, fatty liver, alcohol limited in the plan, hypertension"),
 ("GI/liver", "64", "m", "cirrhosis from fatty liver disease with past hepatic encephalopathy on rifaximin and lactulose, ascites on spironolactone, diabetes on insulin, low-salt diet"),
 ("nephrology", "37", "m", "nephrotic syndrome (membranous nephropathy) on tacrolimus and furosemide, high cholesterol on atorvastatin, blood clot prevention on apixaban, salt and fluid limits"),
 ("pediatrics", "11", "f", "epilepsy on valproate and asthma with a spacer for her inhaled steroid; her mother types most replies, the girl sometimes types herself"),
 ("ophthalmology/lung", "76", "f", "glaucoma on timolol eye drops and latanoprost, COPD on an inhaler, atrial fibrillation on apixaban, macular degeneration with injections"),
]

ROUND3_AUTHORS = {"lea": 3, "max": 3, "noa": 3, "oli": 3}

# Round 4 (more of the tune split, read by engine work): twelve more pictures, four more authors.
CLINICAL_ROUND4 = [
 ("cardiology", "69", "m", "atrial fibrillation on dofetilide (QT and potassium monitored) and apixaban, hypertension, a low-potassium history"),
 ("nephrology", "58", "m", "hypertension with CKD stage 3a on amlodipine and hydrochlorothiazide, prediabetes, benign prostatic hyperplasia on finasteride and tamsulosin"),
 ("rheumatology", "74", "f", "giant cell arteritis on a high-dose prednisone taper and weekly tocilizumab injections, steroid-worsened type 2 diabetes, osteoporosis prevention"),
 ("psychiatry", "57", "f", "treatment-resistant depression on phenelzine (an MAOI) with a low-tyramine diet and a list of drugs to avoid in the plan, hypertension"),
 ("neurology", "66", "m", "essential tremor on propranolol and primidone, mild asthma, anxiety, a glass of wine most nights"),
 ("lung", "71", "m", "idiopathic pulmonary fibrosis on pirfenidone, oxygen with exertion, GERD on pantoprazole, losing weight"),
 ("transplant", "60", "f", "lung transplant on tacrolimus, mycophenolate, prednisone and voriconazole prophylaxis, CKD from the calcineurin inhibitor, no grapefruit and no live vaccines in the plan"),
 ("oncology", "70", "m", "multiple myeloma on lenalidomide and weekly dexamethasone, aspirin for clot prevention, acyclovir prophylaxis, neuropathy"),
 ("HIV", "33", "m", "newly diagnosed HIV on dolutegravir/lamivudine, latent tuberculosis on weekly rifapentine-isoniazid, depression, cannabis"),
 ("women's health", "29", "f", "polycystic ovary syndrome on metformin and spironolactone, trying to conceive, acne, hypothyroidism"),
 ("geriatrics", "86", "f", "heart failure and atrial fibrillation on digoxin, furosemide and warfarin, moderate dementia, falls; the granddaughter types some replies"),
 ("pain", "52", "m", "chronic back pain on extended-release morphine and gabapentin with an opioid agreement and naloxone in the plan, obstructive sleep apnea with CPAP, depression"),
]

ROUND4_AUTHORS = {"pia": 3, "quy": 3, "raf": 3, "sol": 3}

# Round 5 (the validation split's second half): twelve more pictures, four more authors.
CLINICAL_ROUND5 = [
 ("cardiology", "35", "f", "peripartum cardiomyopathy two years ago, now on metoprolol succinate, lisinopril and spironolactone, hoping for another pregnancy, iron deficiency"),
 ("cardiology", "80", "m", "severe aortic stenosis awaiting valve replacement, hypertension on amlodipine, atorvastatin, dizzy on exertion; the plan limits heavy exertion"),
 ("endocrinology", "44", "f", "type 1 diabetes on an insulin pump with hypoglycemia unawareness, hypothyroidism, nasal glucagon prescribed, drives for work"),
 ("nephrology", "63", "m", "recurrent kidney stones and gout on allopurinol and potassium citrate, hydrochlorothiazide, a daily fluid goal in the plan, CKD stage 2"),
 ("psychiatry", "34", "f", "bipolar II disorder on lamotrigine and lurasidone, on a combined estrogen birth-control pill, drinks on weekends, insomnia"),
 ("neurology", "58", "m", "epilepsy after a brain bleed years ago on phenytoin (levels monitored), hypertension, gum overgrowth, a driving restriction in the plan"),
 ("GI/allergy", "27", "m", "eosinophilic esophagitis with a past food impaction on budesonide and omeprazole, asthma, peanut allergy with an epinephrine auto-injector"),
 ("oncology", "66", "f", "metastatic breast cancer on palbociclib and letrozole with blood-count checks, bone metastases on denosumab injections, calcium and vitamin D"),
 ("hematology", "72", "m", "polycythemia vera on hydroxyurea and aspirin with regular phlebotomies, gout, hypertension"),
 ("hepatology", "47", "f", "chronic hepatitis B on entecavir, type 2 diabetes on sitagliptin and metformin, obesity, fatty liver"),
 ("lung", "62", "f", "sarcoidosis on prednisone and methotrexate, past uveitis, osteopenia, a high-calcium history with no vitamin D supplements in the plan"),
 ("geriatrics", "68", "f", "recurrent urinary infections on nitrofurantoin prophylaxis, overactive bladder on oxybutynin, mild cognitive impairment, osteoporosis; her son types some replies"),
]

ROUND5_AUTHORS = {"tia": 3, "uma": 3, "vic": 3, "wes": 3}

# Round 6 (more of the tune split): twelve more pictures, four more authors.
CLINICAL_ROUND6 = [
 ("cardiology", "61", "m", "hypertrophic obstructive cardiomyopathy with an implanted defibrillator, on metoprolol and disopyramide; the plan says avoid dehydration and heavy lifting"),
 ("cardiology", "54", "f", "pulmonary arterial hypertension on sildenafil and ambrisentan, oxygen at night, on warfarin"),
 ("nephrology", "45", "f", "polycystic kidney disease on tolvaptan (liver tests monitored, drink to thirst), hypertension on lisinopril, CKD stage 3b"),
 ("endocrinology", "57", "m", "type 2 diabetes on insulin glargine and lispro, Charcot foot with an offloading boot, diabetic retinopathy treated with laser, hypertension"),
 ("psychiatry", "40", "m", "schizoaffective disorder on monthly paliperidone injections and lithium, smoker, prediabetes; his sister types some replies"),
 ("neurology", "75", "f", "trigeminal neuralgia on carbamazepine (sodium monitored), osteoporosis, depression on citalopram, falls"),
 ("GI", "50", "m", "chronic pancreatitis from alcohol on pancreatic enzymes with meals, diabetes from pancreatitis on insulin, alcohol use disorder in early remission, chronic pain on tramadol"),
 ("infectious disease", "63", "m", "chronic osteomyelitis of the foot on a long oral linezolid course, type 2 diabetes, depression on sertraline"),
 ("oncology", "45", "f", "acute leukemia in remission after a stem cell transplant, on tacrolimus, acyclovir and posaconazole prophylaxis, skin graft-versus-host disease"),
 ("pregnancy", "33", "f", "pregnant at 20 weeks after a prior stillbirth, on low-dose aspirin and enoxaparin for antiphospholipid syndrome, hypothyroidism, home blood pressure checks"),
 ("geriatrics", "83", "m", "CKD stage 4, atrial fibrillation on reduced-dose apixaban, gout, constipation, hard of hearing; his wife types for him"),
 ("rheumatology", "38", "f", "systemic sclerosis with Raynaud's on nifedipine and mycophenolate, reflux on high-dose omeprazole, finger ulcers"),
]

ROUND6_AUTHORS = {"xia": 3, "yul": 3, "zoe": 3, "abe": 3}

# Round 7 (more of the tune split, 2026-12-01 second session): eighteen more pictures, three authors writing six each.
CLINICAL_ROUND7 = [
 ("cardiology", "72", "f", "heart failure with preserved ejection fraction on torsemide and empagliflozin, atrial fibrillation on rivaroxaban, CKD stage 3a, daily weights in the plan"),
 ("cardiology", "49", "m", "familial hypercholesterolemia on rosuvastatin, ezetimibe and evolocumab injections, a stent two years ago on clopidogrel and aspirin"),
 ("nephrology", "66", "f", "peritoneal dialysis at home, anemia on epoetin injections, phosphate binders with meals, fluid limit, hypertension"),
 ("transplant", "52", "m", "liver transplant for alcohol-related cirrhosis on tacrolimus and mycophenolate, alcohol abstinence in the plan, new diabetes, osteoporosis"),
 ("oncology", "61", "m", "prostate cancer on leuprolide injections and abiraterone with prednisone, bone density loss, hypertension, hot flashes"),
 ("HIV", "56", "f", "long-standing HIV on bictegravir/emtricitabine/tenofovir alafenamide, osteopenia, hyperlipidemia on pravastatin, menopause symptoms"),
 ("pregnancy", "36", "f", "postpartum six weeks after preeclampsia, on nifedipine and labetalol, breastfeeding, postpartum depression screening positive, iron supplements"),
 ("psychiatry", "24", "m", "ADHD on lisdexamfetamine, generalized anxiety on escitalopram, asthma, vapes nicotine, plays contact sports"),
 ("neurology", "70", "m", "Parkinson's disease on carbidopa/levodopa and rasagiline, orthostatic low blood pressure on midodrine, constipation, falls"),
 ("neurology", "31", "f", "multiple sclerosis on ocrelizumab infusions every six months, bladder urgency on mirabegron, depression, plans to travel abroad"),
 ("GI", "44", "f", "ulcerative colitis on mesalamine and infliximab infusions, iron deficiency, a past C. difficile infection, avoid NSAIDs in the plan"),
 ("liver", "59", "m", "hepatitis C cured last year with compensated cirrhosis, esophageal varices on nadolol, hepatocellular cancer screening every six months, no alcohol"),
 ("rheumatology", "67", "f", "rheumatoid arthritis on tofacitinib and low-dose prednisone, interstitial lung disease, osteoporosis on alendronate, shingles vaccine due"),
 ("endocrinology", "39", "m", "Addison's disease on hydrocortisone and fludrocortisone with sick-day steroid rules and an emergency injection kit, hypothyroidism"),
 ("endocrinology", "63", "f", "type 2 diabetes on semaglutide injections and metformin, gastroparesis, diabetic kidney disease on losartan, retinopathy"),
 ("lung", "19", "f", "cystic fibrosis on elexacaftor/tezacaftor/ivacaftor, inhaled tobramycin cycles, pancreatic enzymes, CF-related diabetes, a college student"),
 ("lung", "68", "m", "severe COPD on triple inhaler therapy and roflumilast, home oxygen, pulmonary rehab, a heavy smoking history, weight loss"),
 ("geriatrics", "91", "f", "advanced dementia in a care home, hypertension, chronic pain on acetaminophen and a fentanyl patch, pressure sore risk; her daughter types every reply"),
]

ROUND7_AUTHORS = {"bea": 6, "cyd": 6, "dru": 6}

# Round 8 (more of the tune split, 2026-12-01 second session): twenty-four more pictures, four authors writing six each.
CLINICAL_ROUND8 = [
 ("cardiology", "77", "m", "atrial fibrillation on dabigatran and diltiazem, hypertension, benign prostatic hyperplasia on tamsulosin, a pacemaker for sick sinus syndrome"),
 ("cardiology", "58", "f", "coronary disease with a bypass graft last year on ticagrelor, aspirin, metoprolol and high-dose atorvastatin, cardiac rehab in the plan, depression"),
 ("cardiology", "42", "m", "mechanical aortic valve on warfarin with a target INR range in the plan, hypertension, plays recreational hockey"),
 ("nephrology", "71", "m", "CKD stage 4 from diabetes, hyperkalemia history on patiromer, a low-potassium diet, insulin, anemia, vein mapping for a fistula"),
 ("nephrology", "35", "f", "lupus nephritis on mycophenolate, hydroxychloroquine and prednisone, hypertension on losartan, contraception required with her drugs"),
 ("transplant", "47", "m", "heart transplant on tacrolimus, everolimus and prednisone, CMV prophylaxis with valganciclovir, no live vaccines, skin cancer screening"),
 ("oncology", "55", "f", "colon cancer on FOLFOX chemotherapy through a port, neuropathy, anti-nausea drugs, fever rules in the plan, blood clot on apixaban"),
 ("oncology", "73", "m", "chronic lymphocytic leukemia on ibrutinib, atrial fibrillation, on aspirin, recurrent sinus infections"),
 ("HIV", "41", "m", "HIV on darunavir/cobicistat-based therapy, chronic hepatitis B, high cholesterol, uses sildenafil, smokes"),
 ("pregnancy", "28", "f", "pregnant at 28 weeks with gestational diabetes on insulin, asthma on an inhaled steroid, a low-iron history, kick counts in the plan"),
 ("psychiatry", "46", "f", "opioid use disorder on buprenorphine/naloxone film, hepatitis C untreated, depression on bupropion, chronic back pain"),
 ("psychiatry", "67", "m", "major depression on mirtazapine and venlafaxine, alcohol use disorder in remission on naltrexone, hypertension, lives alone"),
 ("neurology", "38", "f", "chronic migraine on monthly erenumab injections and sumatriptan, medication-overuse limits in the plan, on a progestin-only pill"),
 ("neurology", "64", "m", "ischemic stroke last year with left-sided weakness, on clopidogrel and atorvastatin, aphasia, a driving restriction; his wife types some replies"),
 ("GI", "53", "m", "Barrett's esophagus on omeprazole, obesity after a gastric sleeve, vitamin B12 injections, sleep apnea"),
 ("GI", "30", "f", "celiac disease on a gluten-free diet, iron deficiency on iron tablets, migraine, hypothyroidism on levothyroxine"),
 ("rheumatology", "45", "m", "ankylosing spondylitis on adalimumab, uveitis history, latent tuberculosis treated, takes naproxen on bad days"),
 ("endocrinology", "52", "f", "hyperthyroidism (Graves) on methimazole with blood-count checks, thyroid eye disease, osteopenia, smoker trying to quit"),
 ("endocrinology", "70", "m", "type 2 diabetes on glipizide and metformin with hypoglycemia episodes, CKD stage 3, falls, lives with his son"),
 ("lung", "57", "f", "severe asthma on a biologic (mepolizumab), high-dose inhaled steroid and rescue inhaler, an aspirin/NSAID sensitivity, nasal polyps"),
 ("lung", "74", "m", "lung cancer after surgery, on osimertinib, COPD, diabetes, a past pulmonary embolism on rivaroxaban"),
 ("geriatrics", "88", "m", "Parkinson's with dementia on rivastigmine patches, orthostatic hypotension, urinary retention, aspiration risk with thickened liquids in the plan; his daughter types"),
 ("geriatrics", "79", "f", "osteoporosis with a hip fracture last year on denosumab, atrial fibrillation on apixaban, hearing loss, a walker, bladder incontinence"),
 ("hematology", "26", "m", "sickle cell disease on hydroxyurea and folic acid, pain crises managed with oxycodone at home, avascular necrosis of the hip, hydration rules in the plan"),
]

ROUND8_AUTHORS = {"ema": 6, "fox": 6, "gio": 6, "han": 6}

# Round 9 (more of the tune split, 2026-12-01 second session): twenty-four more pictures, four authors writing six each.
CLINICAL_ROUND9 = [
 ("cardiology", "66", "m", "heart failure with reduced ejection fraction on sacubitril/valsartan, carvedilol, spironolactone and dapagliflozin, an implanted defibrillator, a 2 g salt limit and daily weights"),
 ("cardiology", "51", "f", "hypertension resistant to treatment on four drugs (chlorthalidone, amlodipine, olmesartan, spironolactone), primary aldosteronism work-up, migraine, home blood pressure log"),
 ("cardiology", "83", "f", "atrial fibrillation on edoxaban after a stroke, heart failure, hypothyroidism, a recent fall, lives with her husband who has dementia"),
 ("nephrology", "48", "m", "kidney transplant ten years ago on belatacept infusions, mycophenolate and prednisone, gout, hypertension, a skin cancer history"),
 ("nephrology", "76", "f", "hemodialysis three times a week through a fistula, diabetes on insulin, calcium-based binder, a 1-litre fluid limit, amputation of two toes"),
 ("oncology", "39", "f", "breast cancer after surgery on tamoxifen, anxiety on paroxetine, lymphedema of the arm with a compression sleeve in the plan"),
 ("oncology", "68", "m", "kidney cancer on pembrolizumab and axitinib, hypertension, immune-related thyroiditis on levothyroxine, diarrhea rules in the plan"),
 ("HIV", "62", "m", "HIV on rilpivirine-based therapy (acid reducers restricted in the plan), coronary disease on aspirin and atorvastatin, reflux, erectile dysfunction"),
 ("pregnancy", "31", "f", "pregnant at 12 weeks with epilepsy on levetiracetam and high-dose folic acid, nausea and vomiting of pregnancy, migraine history"),
 ("psychiatry", "29", "m", "schizophrenia on clozapine with weekly-to-monthly blood counts, constipation on senna, smoker, weight gain, his mother types some replies"),
 ("psychiatry", "52", "f", "PTSD on prazosin and sertraline, insomnia, alcohol in moderation, chronic neck pain, a past overdose and a safety plan"),
 ("neurology", "45", "m", "myasthenia gravis on pyridostigmine and eculizumab infusions with meningococcal vaccines required, a thymoma removed, sleep apnea"),
 ("neurology", "59", "f", "ALS early stage on riluzole and edaravone, swallowing difficulty with a thickened-fluids plan, weight loss, depression"),
 ("GI", "36", "m", "Crohn's disease with a past bowel resection on ustekinumab, vitamin B12 injections, kidney stones, smokes cannabis"),
 ("liver", "61", "f", "primary biliary cholangitis on ursodiol and obeticholic acid, itching on cholestyramine, osteoporosis, dry eyes"),
 ("rheumatology", "72", "m", "gout with tophi on febuxostat and colchicine, CKD stage 3, heart failure, a past gout flare after diuretics"),
 ("rheumatology", "33", "f", "lupus on hydroxychloroquine (yearly eye checks) and azathioprine, antiphospholipid antibodies on aspirin, photosensitivity, wants pregnancy next year"),
 ("endocrinology", "57", "m", "acromegaly after pituitary surgery on octreotide injections, sleep apnea, diabetes on metformin, hypertension"),
 ("endocrinology", "80", "f", "osteoporosis on yearly zoledronic acid, hyperparathyroidism, vitamin D deficiency, kidney stones, hard of hearing"),
 ("lung", "65", "m", "bronchiectasis with Pseudomonas on inhaled colistin cycles and azithromycin three times a week, hearing checks in the plan, airway clearance device"),
 ("lung", "50", "f", "pulmonary embolism six months ago on rivaroxaban, obesity, on estrogen-containing HRT stopped after the clot, long-haul flights for work"),
 ("geriatrics", "85", "m", "Alzheimer's disease on donepezil and memantine, benign prostatic hyperplasia, hypertension, wanders at night; his wife types for him"),
 ("infectious disease", "44", "f", "hepatitis C treatment in progress with sofosbuvir/velpatasvir, opioid use disorder on methadone, depression, acid reducers restricted in the plan"),
 ("adolescent", "16", "m", "type 1 diabetes on multiple daily injections with a glucose sensor, ADHD on methylphenidate, plays football; he and his father take turns typing"),
]

ROUND9_AUTHORS = {"ivo": 6, "jae": 6, "kai": 6, "liv": 6}

# Round 10 (the validation split's third part, 2026-12-01 second session, written after every engine change of the
# session was made): twenty-four more pictures, four authors writing six each; packed into corpus/val, never read.
CLINICAL_ROUND10 = [
 ("cardiology", "70", "m", "atrial fibrillation after an ablation on flecainide and apixaban, hypertension on valsartan, a sleep apnea diagnosis he is not sure about"),
 ("cardiology", "46", "f", "spontaneous coronary artery dissection last year on aspirin and metoprolol, migraine, on a copper IUD, exercise limits in the plan"),
 ("cardiology", "81", "m", "heart failure on bumetanide and metolazone as needed by weight, CKD stage 3b, gout, a low-salt diet, lives with his daughter"),
 ("nephrology", "55", "f", "IgA nephropathy on budesonide and losartan, hypertension, a low-protein diet, stopped her NSAIDs for good"),
 ("transplant", "64", "m", "kidney and pancreas transplant on tacrolimus, sirolimus and prednisone, hypertension, a past CMV infection, no grapefruit in the plan"),
 ("oncology", "58", "m", "head and neck cancer after radiation with a feeding tube for some meals, hypothyroidism after radiation, morphine for mouth pain, dry mouth"),
 ("oncology", "49", "f", "ovarian cancer on olaparib maintenance, anemia, a past blood clot on enoxaparin injections, menopause after surgery"),
 ("HIV", "27", "m", "HIV diagnosed last year on long-acting cabotegravir/rilpivirine injections every two months, depression, uses PrEP-informed dating apps, asthma"),
 ("pregnancy", "40", "f", "pregnant at 24 weeks with chronic hypertension on labetalol, low-dose aspirin, type 2 diabetes on insulin, a prior cesarean"),
 ("psychiatry", "37", "f", "bipolar I disorder on valproate and quetiapine, polycystic ovaries, on a combined pill, weight gain, lives with a partner who drinks"),
 ("psychiatry", "19", "m", "first-episode psychosis on aripiprazole, cannabis use, ADHD history, university student away from home; his mother types some replies"),
 ("neurology", "73", "f", "normal pressure hydrocephalus with a shunt, urinary urgency on solifenacin, a walker, hypertension, falls"),
 ("neurology", "41", "m", "cluster headaches on verapamil (ECG monitored) and oxygen for attacks, smoker, shift work, sumatriptan injections"),
 ("GI", "62", "f", "diverticulitis twice last year, irritable bowel on dicyclomine, osteoarthritis on celecoxib, a colonoscopy due"),
 ("liver", "50", "m", "autoimmune hepatitis on azathioprine and budesonide, type 2 diabetes, a past alcohol problem in remission, varices screening due"),
 ("rheumatology", "60", "f", "polymyalgia rheumatica on a slow prednisone taper, osteoporosis prevention on alendronate and calcium, glaucoma, diabetes"),
 ("rheumatology", "52", "m", "vasculitis (granulomatosis with polyangiitis) on rituximab infusions and trimethoprim-sulfamethoxazole prophylaxis, CKD stage 3, hearing loss"),
 ("endocrinology", "35", "f", "prolactinoma on cabergoline, hypothyroidism, trying to conceive, a history of an eating disorder"),
 ("endocrinology", "68", "m", "type 2 diabetes on pioglitazone, empagliflozin and metformin, heart failure with mild symptoms, neuropathy with foot care rules in the plan"),
 ("lung", "44", "f", "alpha-1 antitrypsin deficiency on weekly augmentation infusions, emphysema on inhalers, a past smoker, liver checks"),
 ("lung", "78", "m", "obstructive sleep apnea on CPAP, obesity hypoventilation, heart failure, atrial fibrillation on warfarin, uses sleeping pills"),
 ("geriatrics", "92", "f", "frail with chronic kidney disease, atrial fibrillation on low-dose edoxaban, macular degeneration, hearing aids, a deprescribing plan; her grandson types"),
 ("infectious disease", "57", "m", "prosthetic knee infection on long-term doxycycline suppression, diabetes, warfarin for a past clot, sun sensitivity warnings in the plan"),
 ("hematology", "69", "f", "myelodysplastic syndrome on transfusions and an iron chelator, diabetes, a fall risk, fever rules in the plan"),
]

ROUND10_AUTHORS = {"mia": 6, "ned": 6, "ora": 6, "pax": 6}

# Round 11 (tune split, 2026-12-01 third session): twenty-four more pictures, four new authors writing six each,
# with more primary-care polypharmacy and common conditions, so the learned layer meets everyday records too.
CLINICAL_ROUND11 = [
 ("primary care", "59", "f", "type 2 diabetes on metformin and sitagliptin, hypertension on amlodipine and hydrochlorothiazide, knee osteoarthritis, a past gastric ulcer"),
 ("primary care", "72", "m", "hypertension, hyperlipidemia on simvastatin, benign prostatic hyperplasia on finasteride and doxazosin, hearing loss, a pacemaker for heart block"),
 ("primary care", "45", "f", "obesity on a weekly GLP-1 injection, depression on bupropion, hypothyroidism, chronic low back pain"),
 ("cardiology", "68", "m", "peripheral artery disease with claudication on cilostazol and aspirin, a walking program in the plan, type 2 diabetes, current smoker"),
 ("cardiology", "55", "f", "hypertrophic cardiomyopathy on a beta blocker, no heavy lifting or competitive sport in the plan, atrial flutter on rivaroxaban, migraine"),
 ("cardiology", "80", "m", "aortic stenosis awaiting a valve procedure, heart failure on furosemide, CKD stage 3a, gout, lives with his wife"),
 ("nephrology", "61", "m", "polycystic kidney disease on tolvaptan (liver tests monitored), hypertension on ramipril, kidney stones, high fluid intake in the plan"),
 ("transplant", "48", "f", "lung transplant 3 years ago for cystic fibrosis on tacrolimus, azathioprine and prednisone, CF-related diabetes, pancreatic enzymes with meals"),
 ("oncology", "66", "m", "lung cancer on osimertinib, a past pulmonary embolism on apixaban, COPD, weight loss watched in the plan"),
 ("oncology", "52", "f", "multiple myeloma on lenalidomide with aspirin for clot prevention, dexamethasone weekly, bone pain, shingles prophylaxis with acyclovir"),
 ("HIV", "46", "f", "HIV on a single-tablet regimen with rilpivirine (acid reducers restricted in the plan), depression, osteopenia, smoker cutting down"),
 ("pregnancy", "29", "f", "pregnant at 20 weeks with epilepsy on lamotrigine (levels watched), high-dose folic acid, a history of postpartum depression"),
 ("postpartum", "36", "f", "three months postpartum after preeclampsia, on nifedipine, breastfeeding, iron deficiency, a blood pressure log in the plan"),
 ("psychiatry", "58", "m", "recurrent depression on an MAOI (phenelzine) with a tyramine diet in the plan, hypertension, chronic pain"),
 ("psychiatry", "33", "f", "opioid use disorder on methadone from a clinic, hepatitis C untreated, anxiety, smoker, irregular periods"),
 ("neurology", "50", "m", "myasthenia gravis on pyridostigmine and azathioprine, thymectomy in the past, hypertension, a list of drugs to avoid in the plan"),
 ("neurology", "76", "f", "trigeminal neuralgia on carbamazepine (sodium watched), osteoporosis, a past stroke on clopidogrel, lives alone"),
 ("GI", "40", "m", "celiac disease and microscopic colitis, iron deficiency on oral iron, anxiety on sertraline, a gluten-free diet in the plan"),
 ("liver", "63", "f", "fatty liver disease with early cirrhosis, type 2 diabetes on insulin, hypertension, no alcohol in the plan, obesity"),
 ("rheumatology", "47", "f", "psoriatic arthritis on secukinumab injections and methotrexate, fatty liver, depression, on naproxen as needed"),
 ("endocrinology", "54", "m", "acromegaly after pituitary surgery on octreotide injections, sleep apnea on CPAP, type 2 diabetes, hypertension"),
 ("lung", "62", "f", "pulmonary hypertension on sildenafil and ambrisentan, oxygen at night, heart failure symptoms, a salt and fluid limit"),
 ("lung", "35", "m", "severe asthma on a biologic injection (dupilumab) and budesonide-formoterol, nasal polyps, aspirin-exacerbated respiratory disease"),
 ("geriatrics", "86", "m", "moderate dementia in a care home with a daughter who types, atrial fibrillation on apixaban, swallowing difficulty with a thickened diet, recurrent urinary infections"),
]

ROUND11_AUTHORS = {"ray": 6, "sam": 6, "ted": 6, "una": 6}

# Round 12 (tune split, 2026-12-01 third session): twelve more pictures for two more authors, common chronic
# disease in older and younger adults, written beside round 11.
CLINICAL_ROUND12 = [
 ("primary care", "67", "f", "type 2 diabetes on glimepiride and dapagliflozin, hypertension on lisinopril, overactive bladder on oxybutynin, macular degeneration"),
 ("primary care", "38", "m", "hypertension on losartan, gout on febuxostat, fatty liver, heavy weekend drinking the plan asks him to cut, sleep apnea untreated"),
 ("cardiology", "74", "f", "atrial fibrillation on warfarin with weekly INR at a clinic, heart failure with preserved EF on torsemide, hypothyroidism, knee replacement last year"),
 ("cardiology", "61", "m", "two bypass grafts five years ago on aspirin, atorvastatin, metoprolol and ezetimibe, erectile dysfunction, cardiac rehab in the plan"),
 ("nephrology", "53", "f", "CKD stage 4 from reflux nephropathy, anemia on darbepoetin injections, hyperphosphatemia on a binder, fistula placed for future dialysis"),
 ("oncology", "71", "f", "chronic lymphocytic leukemia on ibrutinib (bleeding risk), atrial fibrillation, hypertension, recurrent sinus infections"),
 ("psychiatry", "42", "m", "PTSD on prazosin and sertraline, alcohol use disorder in remission, chronic back pain, a service dog"),
 ("neurology", "58", "f", "restless legs on pramipexole, iron deficiency, migraine with aura on a progestin-only pill, insomnia"),
 ("GI", "66", "m", "Barrett's esophagus on twice-daily pantoprazole, a past C. difficile infection, atrial fibrillation on dabigatran, surveillance scopes in the plan"),
 ("endocrinology", "28", "f", "type 1 diabetes on a closed-loop insulin pump, Hashimoto's on levothyroxine, pregnant at 10 weeks, folic acid"),
 ("lung", "70", "m", "idiopathic pulmonary fibrosis on pirfenidone with meals, oxygen with exertion, GERD, a past smoker, pulmonary rehab"),
 ("geriatrics", "83", "f", "Parkinson's disease on carbidopa-levodopa at set times, orthostatic hypotension on midodrine, constipation, hallucinations history, lives with her husband who helps"),
]

ROUND12_AUTHORS = {"vin": 6, "wyn": 6}


def patient_brief(pid: str, picture: tuple[str, str, str, str], voice: str, phenomena: list, traps: list[str]) -> list[str]:
    """One patient's section of an author's brief file (the same layout in every round)."""
    spec, age, sex, clinical = picture
    return [
        f"## Patient {pid}\n",
        f"- Specialty: {spec}. Age {age}, sex {sex}.",
        f"- Clinical picture (the record must hold it): {clinical}.",
        f"- Voice: {voice}.",
        "- The 8 scenarios (pick drugs/conditions that fit this record; vary the wording; about 1 in 3 safety-critical where it is clinically honest):",
        *(f"  - [{cat}] {text}" for cat, text in phenomena),
        "- The 5 traps:",
        *(f"  - {t}" for t in traps),
        "",
    ]


def write_round(out: Path, *, clinical_list: list, authors: dict[str, int], seed: int) -> None:
    rng = random.Random(seed)
    clinical = clinical_list[:]
    rng.shuffle(clinical)
    voices = VOICES[:]
    rng.shuffle(voices)
    idx = 0
    for author, n in authors.items():
        lines = [f"# Briefs for author '{author}'\n"]
        for k in range(n):
            picture, voice = clinical[idx], voices[idx % len(voices)]
            pid = f"{author}{k+1:02d}"
            idx += 1
            meds = rng.sample([p for p in PHENOMENA if p[0] == "medication"], 4)
            conds = rng.sample([p for p in PHENOMENA if p[0] == "condition"], 2)
            others = rng.sample([p for p in PHENOMENA if p[0] not in ("medication", "condition")], 2)
            traps = rng.sample(TRAPS, 5)
            lines += patient_brief(pid, picture, voice, meds + conds + others, traps)
        (out / f"{author}.md").write_text("\n".join(lines))
    print("briefs:", idx, "of", len(clinical_list), "for", ", ".join(authors))


def main():
    rng = random.Random(20261201)
    clinical = CLINICAL[:]
    rng.shuffle(clinical)
    out = Path(__file__).parent
    idx = 0
    ph_cycle = []
    for author, n in AUTHORS.items():
        lines = [f"# Briefs for author '{author}'\n"]
        for k in range(n):
            picture, voice = clinical[idx], VOICES[(idx * 5) % len(VOICES)]
            pid = f"{author}{k+1:02d}"
            idx += 1
            # 8 phenomena, spread across categories: at least 4 medication, 1-2 condition, then others
            if len(ph_cycle) < 8:
                pool = PHENOMENA[:]
                rng.shuffle(pool)
                ph_cycle += pool
            meds = [p for p in ph_cycle if p[0] == "medication"][:4]
            conds = [p for p in ph_cycle if p[0] == "condition"][:2]
            others = [p for p in ph_cycle if p[0] not in ("medication", "condition")][:2]
            chosen = meds + conds + others
            for p in chosen:
                ph_cycle.remove(p)
            traps = rng.sample(TRAPS, 5)
            lines += patient_brief(pid, picture, voice, chosen, traps)
        (out / f"{author}.md").write_text("\n".join(lines))
    print("clinical briefs used:", idx, "of", len(CLINICAL))
    write_round(out, clinical_list=CLINICAL_ROUND3, authors=ROUND3_AUTHORS, seed=20261202)
    write_round(out, clinical_list=CLINICAL_ROUND4, authors=ROUND4_AUTHORS, seed=20261203)
    write_round(out, clinical_list=CLINICAL_ROUND5, authors=ROUND5_AUTHORS, seed=20261204)
    write_round(out, clinical_list=CLINICAL_ROUND6, authors=ROUND6_AUTHORS, seed=20261205)
    write_round(out, clinical_list=CLINICAL_ROUND7, authors=ROUND7_AUTHORS, seed=20261206)
    write_round(out, clinical_list=CLINICAL_ROUND8, authors=ROUND8_AUTHORS, seed=20261207)
    write_round(out, clinical_list=CLINICAL_ROUND9, authors=ROUND9_AUTHORS, seed=20261208)
    write_round(out, clinical_list=CLINICAL_ROUND10, authors=ROUND10_AUTHORS, seed=20261209)
    write_round(out, clinical_list=CLINICAL_ROUND11, authors=ROUND11_AUTHORS, seed=20261210)
    write_round(out, clinical_list=CLINICAL_ROUND12, authors=ROUND12_AUTHORS, seed=20261211)

main()
